// The rollout behind `cugym watch` and `cugym record`: K envs of one batch, acting greedily from a
// trained model (--model: a Q model, or a PPO policy file acting deterministically, with float
// actions on a Box env) or uniformly at random, with autoreset off, so
// an episode's last state is shown before the env starts over; the episode number, step and
// return of each env are tracked on the host from the K rewards and flags copied per step (only
// the shown envs exist, and only their states are copied for drawing).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/policy.h"
#include "core/canvas.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::cli {

class Viewer {
 public:
  // `model_path` "" acts at random; `id` "" means the model's env (CartPole-v1 without a model).
  // Throws std::invalid_argument when the env does not draw, num_envs is out of range, or the
  // model does not fit the env.
  Viewer(const Registry& registry, const std::string& id, const std::string& model_path, int64_t num_envs,
         Device device, uint64_t seed);

  const EnvSpec& spec() const { return entry_.spec; }
  int64_t num_envs() const { return env_->num_envs(); }
  int tile_columns() const { return columns_; }
  int frame_width() const { return columns_ * spec().render_width; }
  int frame_height() const { return rows_ * spec().render_height; }
  int64_t finished_episodes() const { return finished_; }

  // Starts every env over (a new seed each time, so `r` shows new episodes).
  void Reset();
  // One step of every env.
  void Step();
  // Draws every env in its tile; `set_viewport(x, y, w, h)` moves the canvas to a tile.
  void Draw(Canvas& canvas, const std::function<void(int, int, int, int)>& set_viewport, bool hud) const;
  // "ep 3  step 120  return 120" for env i.
  std::string Status(int64_t i) const;

 private:
  std::unique_ptr<agent::GreedyPolicy> policy_;
  const EnvEntry& entry_;
  std::unique_ptr<VectorEnv> env_;
  Buffer<int32_t> actions_;    // a Discrete env's actions from the model
  Buffer<float> box_actions_;  // a Box env's (num_envs x action_dim) from a PPO gaussian policy
  uint64_t seed_;
  int columns_, rows_;
  std::vector<int64_t> episode_, step_;
  std::vector<double> return_;
  std::vector<uint8_t> ended_;
  int64_t finished_ = 0;
  int64_t resets_ = 0;
};

}  // namespace cugym::cli
