// The rollout behind `cugym watch` and `cugym record`.
#include "cli/viewer.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/memory.h"

namespace cugym::cli {

namespace {

std::unique_ptr<agent::GreedyPolicy> LoadPolicy(const Registry& registry, const std::string& model_path,
                                                const std::string& id, int64_t num_envs, Device device) {
  if (model_path.empty()) return nullptr;
  if (num_envs <= 0 || num_envs > 64) return nullptr;  // the constructor reports it
  return std::make_unique<agent::GreedyPolicy>(registry, model_path, id, num_envs, device);
}

}  // namespace

Viewer::Viewer(const Registry& registry, const std::string& id, const std::string& model_path, int64_t num_envs,
               Device device, uint64_t seed)
    : policy_(LoadPolicy(registry, model_path, id, num_envs, device)),
      entry_(registry.Get(policy_      ? policy_->env_id()
                          : id.empty() ? "CartPole-v1"
                                       : id)),
      seed_(seed) {
  const std::string& env_id = entry_.spec.id;
  if (!entry_.draw || entry_.spec.render_width <= 0)
    throw std::invalid_argument("env '" + env_id + "' does not draw itself, so it cannot be watched or recorded");
  if (num_envs <= 0 || num_envs > 64)
    throw std::invalid_argument("--num-envs must be in 1..64 for watching and recording, got " +
                                std::to_string(num_envs));
  env_ = MakeVectorEnv(registry, env_id, num_envs, device);
  if (policy_ && policy_->continuous())
    box_actions_ = Buffer<float>(device, num_envs * policy_->action_dim());
  else
    actions_ = Buffer<int32_t>(device, num_envs);
  env_->set_autoreset(false);
  columns_ = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(num_envs))));
  rows_ = static_cast<int>((num_envs + columns_ - 1) / columns_);
  Reset();
}

void Viewer::Reset() {
  env_->Reset(seed_ + static_cast<uint64_t>(resets_++));
  const auto n = static_cast<std::size_t>(num_envs());
  episode_.assign(n, 1);
  step_.assign(n, 0);
  return_.assign(n, 0.0);
  ended_.assign(n, 0);
}

void Viewer::Step() {
  const int64_t n = num_envs();
  bool any_ended = false;
  for (int64_t i = 0; i < n; ++i) any_ended |= ended_[i] != 0;
  if (any_ended) {
    env_->ResetDone();
    for (int64_t i = 0; i < n; ++i) {
      if (!ended_[i]) continue;
      ++episode_[i];
      step_[i] = 0;
      return_[i] = 0.0;
    }
  }
  if (policy_ && policy_->continuous()) {
    policy_->Act(env_->obs(), box_actions_.data(), n);
    env_->Step(box_actions_.data());
  } else if (policy_) {
    policy_->Act(env_->obs(), actions_.data(), n);
    env_->Step(actions_.data());
  } else {
    env_->StepRandom(1);
  }
  std::vector<float> rewards(n);
  std::vector<uint8_t> terminated(n), truncated(n);
  CopyBytes(rewards.data(), Device::kCpu, env_->rewards(), env_->device(), n * sizeof(float));
  CopyBytes(terminated.data(), Device::kCpu, env_->terminated(), env_->device(), n);
  CopyBytes(truncated.data(), Device::kCpu, env_->truncated(), env_->device(), n);
  for (int64_t i = 0; i < n; ++i) {
    ++step_[i];
    return_[i] += rewards[i];
    ended_[i] = terminated[i] | truncated[i];
    finished_ += ended_[i];
  }
}

void Viewer::Draw(Canvas& canvas, const std::function<void(int, int, int, int)>& set_viewport, bool hud) const {
  const int w = spec().render_width, h = spec().render_height;
  const std::vector<float> states = env_->GetStates(0, num_envs());
  for (int64_t i = 0; i < num_envs(); ++i) {
    set_viewport(static_cast<int>(i % columns_) * w, static_cast<int>(i / columns_) * h, w, h);
    entry_.draw(states.data() + i * spec().state_dim, canvas);
    if (hud) canvas.Text({6.0f, static_cast<float>(h) - 22.0f}, Status(i), {40, 40, 40});
  }
  // Tiles left empty in the last row stay white.
  for (int64_t i = num_envs(); i < static_cast<int64_t>(columns_) * rows_; ++i) {
    set_viewport(static_cast<int>(i % columns_) * w, static_cast<int>(i / columns_) * h, w, h);
    canvas.Clear({255, 255, 255});
  }
}

std::string Viewer::Status(int64_t i) const {
  char text[96];
  std::snprintf(text, sizeof(text), "ep %lld  step %lld  return %.6g", static_cast<long long>(episode_[i]),
                static_cast<long long>(step_[i]), return_[i]);
  return text;
}

}  // namespace cugym::cli
