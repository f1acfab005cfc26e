// The MinAtar plugin through cugym's runner: random-policy statistics of every MinAtar id the plugin
// registers against the oracle's (minatar 1.0.15, figures below) through the real VectorEnv;
// the last action carried into the next episode on every kind of reset; the per-env path the GPU runs
// (StepOneEnv, on the CPU here) against the vectorized CPU back end; the drawing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/plugin.h"
#include "core/raster_canvas.h"
#include "core/registry.h"
#include "envs/backend_cpu.h"
#include "plugins/minatar/common.h"
#include "plugins/minatar/tests/games.h"
#include "tests/envs/reference_backend.h"
#include "tests/sanitizer.h"

namespace cugym::minatar {
namespace {

const Registry& PluginRegistry() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    LoadPlugin(*r, CUGYM_MINATAR_PLUGIN);
    return r;
  }();
  return *registry;
}

// One id per game with full_action_space as its option (all six actions), the old -v0 ids as aliases
// of those, and the licence the plugin declares (GPL-3.0-only, as this folder's LICENSE).
TEST(MinAtarPlugin, OneIdPerGameTheFullSetAsAnOptionAndItsLicence) {
  Registry registry;
  LoadPlugin(registry, CUGYM_MINATAR_PLUGIN);
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].license, "GPL-3.0-only");
  EXPECT_EQ(registry.plugins()[0].ids.size(), 10u);
  EXPECT_EQ(registry.Ids(),
            (std::vector<std::string>{"MinAtar-Breakout-v1", "MinAtar-Freeway-v1", "MinAtar-SpaceInvaders-v1",
                                      "MinAtar-Asterix-v1", "MinAtar-Seaquest-v1"}));
  NoteShippedEnvs(registry, "");
  std::vector<std::string> notes;
  registry.set_note_handler([&](const std::string& note) { notes.push_back(note); });
  for (const char* name : {"Breakout", "Freeway", "SpaceInvaders", "Asterix", "Seaquest"}) {
    const std::string game = name;
    const std::string id = "MinAtar-" + game + "-v1";
    EXPECT_EQ(registry.Options(id), std::vector<std::string>{"full_action_space"});
    EXPECT_EQ(registry.Get(id + ":full_action_space").spec.action_space.n, 6);
    EXPECT_EQ(&registry.Get("MinAtar-" + game + "-v0"), &registry.Get(id + ":full_action_space"));
    EXPECT_EQ(registry.LicenseOf(id), "GPL-3.0-only");
  }
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_EQ(notes[0],
            "MinAtar-Breakout-v0 (all six actions) is now MinAtar-Breakout-v1 with full_action_space: name it "
            "MinAtar-Breakout-v1:full_action_space (CLI, configs) or pass full_action_space=True (Python)");
  EXPECT_TRUE(registry.missing().empty());
}

// The oracle's random-policy return and length, mean and sample std over 300 episodes.
struct Reference {
  double return_mean, return_std, length_mean, length_std;
};
const std::map<std::string, Reference>& OracleStatistics() {
  static const std::map<std::string, Reference> table = {
      {"MinAtar-Asterix-v1", {0.563, 1.041, 67.2, 41.5}},
      {"MinAtar-Asterix-v1:full_action_space", {0.417, 0.799, 66.3, 42.7}},
      {"MinAtar-Breakout-v1", {0.353, 0.574, 9.6, 5.9}},
      {"MinAtar-Breakout-v1:full_action_space", {0.487, 0.706, 11.0, 7.4}},
      {"MinAtar-Freeway-v1", {0.443, 0.684, 2501, 0}},
      {"MinAtar-Freeway-v1:full_action_space", {0.150, 0.418, 2501, 0}},
      {"MinAtar-Seaquest-v1", {0.067, 0.299, 28.0, 31.4}},
      {"MinAtar-Seaquest-v1:full_action_space", {0.067, 0.299, 28.0, 31.4}},
      {"MinAtar-SpaceInvaders-v1", {4.317, 3.164, 60.4, 44.4}},
      {"MinAtar-SpaceInvaders-v1:full_action_space", {2.730, 2.166, 49.2, 35.5}},
  };
  return table;
}
constexpr double kReferenceEpisodes = 300;

struct Sample {
  double sum = 0, sum_sq = 0, n = 0;
  void Add(double x) {
    sum += x;
    sum_sq += x * x;
    n += 1;
  }
  double Mean() const { return sum / n; }
  double Std() const { return std::sqrt(std::max(0.0, (sum_sq - sum * sum / n) / (n - 1))); }
};

// Random actions (the runner's own stream), autoreset, Philox draws: the first `per_env` episodes of
// every env, so no episode length is favoured. Episodes after the first start with the last action
// of the one before, as the oracle's do. Sanitizer builds take a quarter of the envs (the tolerance
// follows the count): the Release configuration runs them all, the sanitizers need the code only.
TEST(MinAtarStatistics, RandomPolicyMatchesTheOracle) {
  constexpr int64_t kShare = testing::kSanitizerBuild ? 4 : 1;
  int checked = 0;
  for (const EnvEntry& entry : PluginRegistry().entries()) {  // the full_action_space variants too
    const std::string& id = entry.spec.id;
    if (id.rfind("MinAtar-", 0) != 0) continue;
    SCOPED_TRACE(id);
    const auto ref = OracleStatistics().find(id);
    ASSERT_NE(ref, OracleStatistics().end()) << "no oracle statistics for " << id;
    const bool freeway = id.find("Freeway") != std::string::npos;
    const int64_t n = (freeway ? 300 : 1000) / kShare;  // Freeway: 2501 acts an episode
    const int per_env = freeway ? 1 : 2;
    auto env = MakeVectorEnv(PluginRegistry(), id, n, Device::kCpu);
    env->Reset(2024);
    std::vector<int> done(n, 0);
    Sample returns, lengths;
    int64_t remaining = n;
    for (int t = 0; t < 20000 && remaining > 0; ++t) {
      env->StepRandom(1);
      const uint8_t* term = env->terminated();
      const uint8_t* trunc = env->truncated();
      for (int64_t i = 0; i < n; ++i) {
        if (!(term[i] | trunc[i]) || done[i] >= per_env) continue;
        ASSERT_EQ(trunc[i], 0) << "env " << i << ": MinAtar never truncates";
        returns.Add(env->episode_returns()[i]);
        lengths.Add(env->episode_lengths()[i]);
        if (freeway) {
          ASSERT_EQ(env->episode_lengths()[i], 2501) << "env " << i;
        }
        if (++done[i] == per_env) --remaining;
      }
    }
    ASSERT_EQ(remaining, 0) << "episodes still running after 20000 steps";
    auto expect_close = [&](const char* what, const Sample& port, double mean, double std) {
      const double se = std::sqrt(port.Std() * port.Std() / port.n + std * std / kReferenceEpisodes);
      EXPECT_LE(std::fabs(port.Mean() - mean), 4 * se)
          << what << ": cugym " << port.Mean() << " +- " << port.Std() << " over " << port.n << " episodes, oracle "
          << mean << " +- " << std;
    };
    std::printf("%-26s return %.3f +- %.3f (oracle %.3f), length %.1f +- %.1f (oracle %.1f), %.0f episodes\n",
                id.c_str(), returns.Mean(), returns.Std(), ref->second.return_mean, lengths.Mean(), lengths.Std(),
                ref->second.length_mean, returns.n);
    expect_close("return", returns, ref->second.return_mean, ref->second.return_std);
    if (!freeway) expect_close("length", lengths, ref->second.length_mean, ref->second.length_std);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

template <class Game>
using V1 = MinAtarEnv<Game, true>;

// The flat state's last two entries: last_action, terminal.
template <class Env>
int LastAction(const VectorEnv& env, int64_t i) {
  return static_cast<int>(env.GetStates(i, 1)[Env::kStateDim - 2]);
}

// With no sticky actions the executed action is the requested one: after every kind of reset but the
// batch's first, the new episode starts with the last action of the old one (the oracle's reset()
// keeps it); Reset(seed) starts from the no-op.
TEST(MinAtarCarryOver, TheLastActionSurvivesEveryResetButTheFirst) {
  using Env = V1<Breakout>;
  Env::Params params;
  params.sticky_action_prob = 0.0f;
  const int64_t n = 5;
  BatchedEnv<Env, CpuBackend> env(n, Device::kCpu, params);
  env.Reset(1);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(LastAction<Env>(env, i), kNoop);
  const std::vector<int32_t> right(n, 2);  // minimal index 2 = full action 3 (right)
  int ended = 0;
  for (int t = 0; t < 100 && ended == 0; ++t) {
    env.Step(right.data());
    for (int64_t i = 0; i < n; ++i) {
      if (!env.terminated()[i]) continue;
      ++ended;
      EXPECT_EQ(env.GetStates(i, 1)[Env::kStateDim - 1], 0.0f) << "a fresh episode after autoreset";
      EXPECT_EQ(LastAction<Env>(env, i), kRight) << "env " << i;
    }
  }
  EXPECT_GT(ended, 0);
  // Autoreset off: ResetDone and ResetMasked carry it too.
  env.set_autoreset(false);
  const std::vector<int32_t> left(n, 1);
  for (int t = 0; t < 100; ++t) env.Step(left.data());
  env.ResetDone();
  std::vector<uint8_t> all(n, 1);
  env.ResetMasked(all.data());
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(LastAction<Env>(env, i), kLeft) << "env " << i;
  env.Reset(1);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(LastAction<Env>(env, i), kNoop);
}

using testing::ReferenceBackend;

template <class Env>
void ExpectSameOutputs(const VectorEnv& a, const VectorEnv& b) {
  const int64_t n = a.num_envs();
  auto same = [&](auto* x, auto* y, int64_t count, const char* what) {
    for (int64_t k = 0; k < count; ++k) ASSERT_EQ(x[k], y[k]) << what << " [" << k << "]";
  };
  same(a.obs(), b.obs(), n * Env::kObsDim, "obs");
  same(a.rewards(), b.rewards(), n, "rewards");
  same(a.terminated(), b.terminated(), n, "terminated");
  same(a.episode_returns(), b.episode_returns(), n, "episode returns");
  same(a.episode_lengths(), b.episode_lengths(), n, "episode lengths");
  EXPECT_EQ(a.GetStates(0, n), b.GetStates(0, n));
}

// The per-env path (compiled here) against the vectorized CPU path as the plugin ships it (loaded,
// not compiled a second time here).
template <class Env>
void CheckRolloutAgrees() {
  const std::string id = Env::Spec().id;
  SCOPED_TRACE(id);
  const int64_t n = 67;
  BatchedEnv<Env, ReferenceBackend> reference(n, Device::kCpu);
  const std::unique_ptr<VectorEnv> plugin_env = MakeVectorEnv(PluginRegistry(), id, n, Device::kCpu);
  VectorEnv& cpu = *plugin_env;
  reference.Reset(13);
  cpu.Reset(13);
  reference.StepRandom(600);  // one call, state in registers: many episodes end and restart
  for (int t = 0; t < 600; ++t) cpu.StepRandom(1);
  ExpectSameOutputs<Env>(reference, cpu);
  // Given actions, and autoreset off with ResetDone.
  std::vector<int32_t> actions(n);
  for (int t = 0; t < 50; ++t) {
    for (int64_t i = 0; i < n; ++i) actions[i] = static_cast<int32_t>((i * 7 + t * 3) % Env::kNumActions);
    reference.Step(actions.data());
    cpu.Step(actions.data());
  }
  ExpectSameOutputs<Env>(reference, cpu);
  reference.set_autoreset(false);
  cpu.set_autoreset(false);
  reference.StepRandom(40);
  for (int t = 0; t < 40; ++t) cpu.StepRandom(1);
  reference.ResetDone();
  cpu.ResetDone();
  ExpectSameOutputs<Env>(reference, cpu);
}

TEST(MinAtarBackends, PerEnvPathEqualsTheVectorizedCpuPath) {
#define CUGYM_CHECK_GAME(Type, name)            \
  CheckRolloutAgrees<MinAtarEnv<Type, true>>(); \
  CheckRolloutAgrees<MinAtarEnv<Type, false>>();
  CUGYM_MINATAR_GAMES(CUGYM_CHECK_GAME)
#undef CUGYM_CHECK_GAME
}

// Breakout's first frame: 32 x 32 px cells in the oracle's colours, the highest channel on top.
TEST(MinAtarDraw, CellsInTheOracleColours) {
  using Env = V1<Breakout>;
  Env::State s{};
  s.game.ball_x = 0;
  s.game.ball_y = 5;
  s.game.last_x = 1;
  s.game.last_y = 4;
  s.game.paddle_x = 4;
  s.game.bricks[0] = 0b1;  // one brick, at (row 1, column 0)
  const EnvSpec spec = Env::Spec();
  std::vector<uint8_t> rgb(spec.render_width * spec.render_height * 3, 7);
  RasterCanvas canvas(rgb.data(), spec.render_width, spec.render_height);
  Env::Draw(Env::Params{}, s, canvas);
  auto pixel = [&](int col, int row) {
    const uint8_t* p = &rgb[(row * spec.render_width + col) * 3];
    return std::vector<int>{p[0], p[1], p[2]};
  };
  // Every pixel of cell (y, x) has one colour, and the cell is exactly 32 x 32.
  auto cell = [&](int y, int x) {
    const std::vector<int> first = pixel(32 * x, 32 * y);
    for (int r = 32 * y; r < 32 * (y + 1); ++r)
      for (int c = 32 * x; c < 32 * (x + 1); ++c) EXPECT_EQ(pixel(c, r), first) << "cell " << y << "," << x;
    return first;
  };
  EXPECT_EQ(cell(9, 4), (std::vector<int>{22, 61, 78}));     // paddle
  EXPECT_EQ(cell(5, 0), (std::vector<int>{84, 121, 47}));    // ball
  EXPECT_EQ(cell(4, 1), (std::vector<int>{208, 126, 147}));  // trail
  EXPECT_EQ(cell(1, 0), (std::vector<int>{193, 202, 243}));  // brick
  EXPECT_EQ(cell(0, 0), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(cell(9, 9), (std::vector<int>{0, 0, 0}));
}

}  // namespace
}  // namespace cugym::minatar
