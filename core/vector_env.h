// The batched environment interface: N copies of one env on one device.
//
// Semantics (same-step autoreset, as Gymnasium's AutoresetMode.SAME_STEP):
// - An env that terminates or truncates in Step() is reset inside the same step: obs() holds
//   the first observation of its new episode, final_obs() the last observation of the old one.
// - terminated and truncated are separate flags; both are set when the last allowed step is
//   also terminal (as Gymnasium's TimeLimit). Truncation counts steps per env.
// - episode_returns()/episode_lengths() hold the finished episode's statistics where
//   terminated | truncated; other entries are unspecified.
// - Randomness is keyed by (seed, env index, per-env counter): env i's trajectory does not
//   depend on the number of envs or the device. (With lanes, the index within the lane.)
// All pointers are device pointers (host memory for the CPU back end), valid until the next
// Reset or Step. Nothing is copied to the host per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/spec.h"

namespace cugym {

// Everything a batch of envs needs to go on exactly where it was (for checkpoints): the flat
// states (GetStates' order), each env's RNG counter, episode step count and running return, and
// the seed and step count the batch was reset and stepped with; for host-stepped envs (a physics
// engine's world per env) also each episode's start and actions, which LoadSnapshot replays.
struct VectorEnvSnapshot {
  uint64_t seed = 0;
  uint64_t steps = 0;  // Step/StepRandom calls since Reset (keys the random-action stream)
  std::vector<float> states;
  std::vector<uint32_t> rng_counters;
  std::vector<int32_t> elapsed;
  std::vector<float> running_returns;
  std::vector<uint64_t> env_seeds;  // each env's seed after ResetSeeds or ResetLanes; empty: all `seed`
  int64_t lane_size = 0;            // envs per lane after ResetLanes; 0: no lanes
  // Host-stepped envs only (empty otherwise). A physics engine keeps more between steps than a
  // flat state holds (Box2D: contact manifolds with their warm-start impulses, joint impulses,
  // sleep timers, its broad phase's tree and contact order), so such an env's snapshot is how its
  // episode began and the actions since: LoadSnapshot resets the world from that RNG counter and
  // replays the actions, which rebuilds it bit for bit (the engine is deterministic on one
  // machine). An episode is at most max_episode_steps actions.
  std::vector<int64_t> episode_starts;  // [num_envs] RNG counter before the episode's reset;
                                        // kEpisodeFromStates: begun by SetStates (not replayable)
  std::vector<float> episode_actions;   // env after env, elapsed[i] actions of action_dim floats
                                        // each for an env with a start, none for one begun by
                                        // SetStates (Discrete actions as floats, exact below 2^24)
};

// VectorEnvSnapshot::episode_starts of an env whose episode began with SetStates: LoadSnapshot
// sets its flat state (SetStates' restore, without the engine's caches) instead of replaying.
inline constexpr int64_t kEpisodeFromStates = -1;

// Caller-owned arrays for a VectorEnv's per-step outputs (see VectorEnv::SetOutputs); a null
// pointer keeps the env's own array for that output.
struct StepOutputs {
  float* obs = nullptr;           // [num_envs, obs_dim]
  float* rewards = nullptr;       // [num_envs]
  uint8_t* terminated = nullptr;  // [num_envs]
  uint8_t* truncated = nullptr;   // [num_envs]
};

// The checks every VectorEnv implementation makes on GetStates/SetStates arguments: envs
// [first, first + count) inside a batch of n (std::out_of_range), and, for SetStates,
// count * state_dim floats (std::invalid_argument).
inline void CheckEnvRange(int64_t first, int64_t count, int64_t n) {
  if (first < 0 || count < 0 || first + count > n)
    throw std::out_of_range("envs [" + std::to_string(first) + ", " + std::to_string(first + count) +
                            ") outside a batch of " + std::to_string(n));
}
inline void CheckFlatStates(int64_t first, int64_t count, int64_t n, int64_t state_dim, std::size_t floats) {
  CheckEnvRange(first, count, n);
  if (static_cast<int64_t>(floats) != count * state_dim)
    throw std::invalid_argument("SetStates: expected " + std::to_string(count * state_dim) + " floats, got " +
                                std::to_string(floats));
}

// ResetLanes' checks: at least one lane, lane_size >= 1 and seeds.size() x lane_size == n
// (std::invalid_argument otherwise).
inline void CheckLanes(const std::vector<uint64_t>& seeds, int64_t lane_size, int64_t n) {
  if (seeds.empty() || lane_size < 1 || static_cast<int64_t>(seeds.size()) * lane_size != n)
    throw std::invalid_argument("ResetLanes: " + std::to_string(seeds.size()) + " lanes of " +
                                std::to_string(lane_size) + " envs for a batch of " + std::to_string(n));
}
// LoadSnapshot's checks: `s` holds n envs of state_dim floats each (env `id`), and n env seeds or none.
inline void CheckSnapshotFits(const VectorEnvSnapshot& s, int64_t n, int64_t state_dim, const std::string& id) {
  const auto count = static_cast<std::size_t>(n);
  if (s.states.size() != count * static_cast<std::size_t>(state_dim) || s.rng_counters.size() != count ||
      s.elapsed.size() != count || s.running_returns.size() != count)
    throw std::invalid_argument("LoadSnapshot: the snapshot is not of " + std::to_string(n) + " " + id + " envs (" +
                                std::to_string(s.states.size()) + " state floats, " +
                                std::to_string(s.rng_counters.size()) + " counters)");
  if (!s.env_seeds.empty() && s.env_seeds.size() != count)
    throw std::invalid_argument("LoadSnapshot: " + std::to_string(s.env_seeds.size()) + " env seeds for " +
                                std::to_string(n) + " envs");
}
// Each env's seed in lanes: lane l's lane_size envs have seeds[l].
inline std::vector<uint64_t> LaneEnvSeeds(const std::vector<uint64_t>& seeds, int64_t lane_size) {
  std::vector<uint64_t> env_seeds;
  env_seeds.reserve(seeds.size() * static_cast<std::size_t>(lane_size));
  for (uint64_t seed : seeds) env_seeds.insert(env_seeds.end(), static_cast<std::size_t>(lane_size), seed);
  return env_seeds;
}
// A snapshot's lane seeds (each lane's first env's); std::invalid_argument unless its env seeds
// come in whole lanes.
inline std::vector<uint64_t> LaneSeedsOf(const VectorEnvSnapshot& s) {
  const auto lane = static_cast<std::size_t>(s.lane_size);
  if (lane == 0 || s.env_seeds.size() % lane != 0)
    throw std::invalid_argument("LoadSnapshot: " + std::to_string(s.env_seeds.size()) + " env seeds in lanes of " +
                                std::to_string(s.lane_size));
  std::vector<uint64_t> seeds;
  for (std::size_t i = 0; i < s.env_seeds.size(); i += lane) seeds.push_back(s.env_seeds[i]);
  return seeds;
}
// Appends the envs of `more` after those of `into` (flat states, RNG counters, step counts,
// running returns, episodes): the envs of two batches as one, as a batch in lanes loads the
// snapshots of its lanes' own batches. Seeds, lanes and the step count stay the caller's. The
// episodes (host-stepped envs) are kept only when every part has them.
inline void AppendEnvs(VectorEnvSnapshot* into, const VectorEnvSnapshot& more) {
  const bool first = into->rng_counters.empty();
  const auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  if ((first || !into->episode_starts.empty()) && !more.episode_starts.empty()) {
    append(into->episode_starts, more.episode_starts);
    append(into->episode_actions, more.episode_actions);
  } else {
    into->episode_starts.clear();
    into->episode_actions.clear();
  }
  append(into->states, more.states);
  append(into->rng_counters, more.rng_counters);
  append(into->elapsed, more.elapsed);
  append(into->running_returns, more.running_returns);
}
// The lanes `lanes` of a snapshot in lanes (of s.lane_size envs, state_dim floats of state each),
// in that order: a snapshot in lanes again, which a VectorEnv of lanes.size() x s.lane_size envs
// loads to go on as those lanes would have. A snapshot without env seeds is one of lanes that all
// had s.seed. Throws std::out_of_range for a lane the snapshot does not hold.
inline VectorEnvSnapshot LanesOf(const VectorEnvSnapshot& s, const std::vector<int64_t>& lanes, int64_t state_dim) {
  const int64_t size = s.lane_size, n = static_cast<int64_t>(s.rng_counters.size());
  VectorEnvSnapshot out;
  out.seed = s.seed;
  out.steps = s.steps;
  out.lane_size = size;
  for (int64_t lane : lanes) {
    if (size < 1 || lane < 0 || (lane + 1) * size > n)
      throw std::out_of_range("LanesOf: lane " + std::to_string(lane) + " of a snapshot of " + std::to_string(n) +
                              " envs in lanes of " + std::to_string(size));
    const auto first = static_cast<std::size_t>(lane * size), count = static_cast<std::size_t>(size);
    const auto dim = static_cast<std::size_t>(state_dim);
    const auto append = [&](auto& to, const auto& from, std::size_t width) {
      to.insert(to.end(), from.begin() + first * width, from.begin() + (first + count) * width);
    };
    append(out.states, s.states, dim);
    append(out.rng_counters, s.rng_counters, 1);
    append(out.elapsed, s.elapsed, 1);
    append(out.running_returns, s.running_returns, 1);
    if (!s.episode_starts.empty()) {
      append(out.episode_starts, s.episode_starts, 1);
      // Env i's actions start after those of the envs before it (elapsed[j] x action_dim each).
      int64_t before = 0, in_lane = 0, all = 0;
      for (std::size_t i = 0; i < s.elapsed.size() && i < s.episode_starts.size(); ++i) {
        const int64_t steps = s.episode_starts[i] == kEpisodeFromStates ? 0 : s.elapsed[i];
        all += steps;
        if (i < first) before += steps;
        if (i >= first && i < first + count) in_lane += steps;
      }
      const int64_t floats = static_cast<int64_t>(s.episode_actions.size());
      const int64_t action_dim = all > 0 ? floats / all : 0;
      if (all > 0 ? floats % all != 0 : floats != 0)
        throw std::invalid_argument("LanesOf: " + std::to_string(floats) + " episode action floats for " +
                                    std::to_string(all) + " episode steps");
      out.episode_actions.insert(out.episode_actions.end(), s.episode_actions.begin() + before * action_dim,
                                 s.episode_actions.begin() + (before + in_lane) * action_dim);
    }
    if (s.env_seeds.empty()) {
      out.env_seeds.insert(out.env_seeds.end(), count, s.seed);
    } else {
      append(out.env_seeds, s.env_seeds, 1);
    }
  }
  if (!out.env_seeds.empty()) out.seed = out.env_seeds.front();
  return out;
}

class VectorEnv {
 public:
  virtual ~VectorEnv() = default;

  virtual const EnvSpec& spec() const = 0;
  virtual Device device() const = 0;
  virtual int64_t num_envs() const = 0;

  // Starts a new episode in every env; env i draws from (seed, i).
  virtual void Reset(uint64_t seed) = 0;
  // Starts a new episode in every env with a seed of its own: env i draws from (seeds[i], i), in
  // this episode and every later one, so Reset(s) is ResetSeeds with all seeds s. `seeds` holds
  // num_envs values (std::invalid_argument otherwise). Random actions (StepRandom) stay keyed by
  // seeds[0].
  virtual void ResetSeeds(const std::vector<uint64_t>& seeds) = 0;
  // Lanes: seeds.size() batches of lane_size envs in one (num_envs = seeds.size() x lane_size), for
  // an agent's K lanes stepping together (agents/off_policy/dqn.h): env l lane_size + j starts and draws as env j of
  // a batch of lane_size envs that Reset(seeds[l]) started does, in this episode and every later
  // one. Random actions (StepRandom) stay keyed by seeds[0] and the global index. Throws
  // std::invalid_argument when the sizes do not fit, and where the env cannot step in lanes (the
  // default; supports_lanes() says which).
  virtual void ResetLanes(const std::vector<uint64_t>& seeds, int64_t lane_size) {
    (void)seeds;
    (void)lane_size;
    throw std::invalid_argument(spec().id + " cannot step its envs in lanes");
  }
  virtual bool supports_lanes() const { return false; }
  // One step of every env. `actions` is a device pointer: num_envs int32 for a Discrete
  // action space, num_envs * action_dim float32 for a Box. The wrong kind throws.
  virtual void Step(const int32_t* actions) = 0;
  virtual void Step(const float* actions) = 0;
  // With autoreset off (Gymnasium's AutoresetMode.DISABLED) an env that ends keeps its state
  // and goes on stepping from it; final_obs and the episode statistics are still written.
  // On by default; Reset and SetStates do not change it.
  virtual void set_autoreset(bool on) = 0;
  virtual bool autoreset() const = 0;
  // Resets the envs whose terminated or truncated flag is set (with autoreset off, the caller's
  // way to start their next episode after looking at the last state) and clears their flags
  // and rewards.
  virtual void ResetDone() = 0;
  // Resets the envs where mask[i] != 0 (a device pointer to num_envs bytes), whatever their
  // flags, and clears their flags and rewards: Gymnasium's reset(options={"reset_mask": m}).
  virtual void ResetMasked(const uint8_t* mask) = 0;
  // From now on Reset, Step, ResetDone, ResetMasked and SetStates write observations, rewards
  // and flags into the given device arrays instead of the env's own, and obs(), rewards(),
  // terminated() and truncated() return them. A binding points these at fresh arrays before
  // each step, so every step's results are new arrays filled by the step itself, with no copy.
  // The arrays must stay valid until the next SetOutputs (or until the env is destroyed);
  // SetOutputs({}) goes back to the env's own arrays (whose contents are then stale).
  virtual void SetOutputs(const StepOutputs& outputs) = 0;
  // `steps` consecutive steps with uniformly random actions drawn on the device (from the
  // seed given to Reset). Outputs are those of the last step. Used by benchmarks.
  virtual void StepRandom(int64_t steps) = 0;

  virtual const float* obs() const = 0;                // [num_envs, obs_dim]
  virtual const float* final_obs() const = 0;          // [num_envs, obs_dim], rows where done
  virtual const float* rewards() const = 0;            // [num_envs]
  virtual const uint8_t* terminated() const = 0;       // [num_envs], 0 or 1
  virtual const uint8_t* truncated() const = 0;        // [num_envs], 0 or 1
  virtual const float* episode_returns() const = 0;    // [num_envs], rows where done
  virtual const int32_t* episode_lengths() const = 0;  // [num_envs], rows where done

  // Flat internal states (Gymnasium's env.unwrapped.state order) of envs [first, first+count),
  // through host memory; for replay, tests and rendering, never per step in a hot loop.
  virtual std::vector<float> GetStates(int64_t first, int64_t count) const = 0;
  // Sets the states of envs [first, first + count) and recomputes their observations; their
  // episode step counters and returns restart at 0.
  virtual void SetStates(int64_t first, int64_t count, const std::vector<float>& states) = 0;

  // CUDA: the stream (a cudaStream_t) every kernel of this env is queued on, so its steps are
  // ordered with the caller's work (the agent's network) without host synchronisation and can be
  // captured into the caller's CUDA graphs. nullptr (the default) is CUDA's per-thread default
  // stream, never the legacy one. The stream must be blocking (cudaStreamCreate, not
  // cudaStreamNonBlocking; std::invalid_argument otherwise, see CheckBlockingStream): the env's
  // synchronous copies (GetStates, SetStates, snapshots, a host-stepped env's actions) run on the
  // legacy default stream and meet the stream's kernels in order only through it. Envs on the
  // CPU ignore it, whatever its value.
  virtual void set_stream(void* stream) { (void)stream; }
  // Whether Step(actions) only queues device work on that stream (no host work, waits or
  // host-read values), so a caller may capture it into a CUDA graph and replay it. Replays do
  // not call Step, so the host-side step count (VectorEnvSnapshot::steps, which keys only
  // StepRandom) leaves them out. Envs that step on the host say false.
  virtual bool step_capturable() const { return false; }
  // The batch's full state, through host memory (see VectorEnvSnapshot); false where the env
  // cannot give one (an env with a physics engine's world).
  virtual bool SaveSnapshot(VectorEnvSnapshot* snapshot) const {
    (void)snapshot;
    return false;
  }
  // Restores a snapshot of the same env and batch size (std::invalid_argument otherwise) and
  // recomputes the observations: the next Step continues as the saved batch would have.
  virtual void LoadSnapshot(const VectorEnvSnapshot& snapshot) {
    (void)snapshot;
    throw std::invalid_argument(spec().id + " cannot restore a snapshot");
  }
};

// Lanes of lane_size envs (VectorEnv::ResetLanes), lane l's as Reset(seeds[l]) starts a batch of its
// own; one lane is Reset(seeds[0]) itself, which every env can do (the solo run of an agent).
inline void ResetInLanes(VectorEnv& env, const std::vector<uint64_t>& seeds, int64_t lane_size) {
  if (seeds.size() == 1 && lane_size == env.num_envs()) {
    env.Reset(seeds.front());
  } else {
    env.ResetLanes(seeds, lane_size);
  }
}

}  // namespace cugym
