// What an environment declares about itself: id, spaces, limits. Host-side description used by
// the registry, the CLI and the agents; the batched dynamics never read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cugym {

enum class ScalarType { kFloat32, kInt32 };

// Discrete(n): actions 0..n-1 (int32). Box: float32 values within [low, high] per dimension
// (±infinity for unbounded dimensions).
struct Space {
  enum class Kind { kDiscrete, kBox };
  Kind kind = Kind::kBox;
  int64_t n = 0;               // Discrete only
  std::vector<int64_t> shape;  // Box only
  std::vector<float> low, high;
  ScalarType dtype = ScalarType::kFloat32;

  static Space Discrete(int64_t n);
  static Space Box(std::vector<float> low, std::vector<float> high);
  // A Box of any shape (row-major, e.g. {10, 10, 4} for an HWC grid) with the same bounds everywhere.
  static Space UniformBox(std::vector<int64_t> shape, float low, float high);

  bool is_discrete() const { return kind == Kind::kDiscrete; }
  // Number of scalars one sample holds (1 for Discrete).
  int64_t flat_size() const;
  // "Discrete(2)", "Box(4,) float32" or "Box(10,10,4) float32".
  std::string ToString() const;
};

struct EnvSpec {
  std::string id;                 // e.g. "CartPole-v1"
  Space observation_space;        // always a float32 Box
  Space action_space;             // Discrete or float32 Box
  int64_t state_dim = 0;          // length of the flat state (Gymnasium's env.unwrapped.state)
  int32_t max_episode_steps = 0;  // truncation limit; 0 = never truncate
  bool has_reward_threshold = false;
  double reward_threshold = 0.0;  // return that counts as solved, when has_reward_threshold
  int32_t render_fps = 0;
  int32_t render_width = 0;  // frame size in pixels for Canvas drawing; 0 = does not draw
  int32_t render_height = 0;
  std::string reference;  // where the dynamics come from

  int64_t obs_dim() const { return observation_space.flat_size(); }
  int64_t action_dim() const { return action_space.flat_size(); }
};

}  // namespace cugym
