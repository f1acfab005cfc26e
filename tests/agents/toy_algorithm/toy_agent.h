// A test-only algorithm, "toy_q": one-step Q-learning on rollouts (PQN with lambda 0 and a fixed
// epsilon, its own config key toy_epsilon), one lane per agent. It exists to show, and to test,
// what adding an algorithm to cugym takes: this folder (its agent on the on-policy family, its
// registration) and one RegisterAlgorithm line where a program starts (test_toy_algorithm.cpp);
// nothing outside it changes. It trains, writes a metrics column of its own (toy_rollouts), saves
// a Q model file and resumes exactly from its checkpoints through the one driver.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/algorithm.h"
#include "agents/common/explore_ops.h"
#include "agents/common/q_learner.h"
#include "agents/on_policy/on_policy_agent.h"

namespace cugym::testing {

// The registration: name, metrics columns, factory and the key toy_epsilon (in [0, 1]).
agent::Algorithm ToyAlgorithm();

class ToyQAgent final : public agent::OnPolicyAgent {
 public:
  // One seed (`seeds` empty: config.seed); throws std::invalid_argument for more, and for what the
  // lane-agent base refuses.
  ToyQAgent(const Registry& registry, const agent::TrainConfig& config, Device device,
            std::vector<uint64_t> seeds = {});
  ~ToyQAgent() override;

  agent::MetricsRow Progress(int lane, double seconds, int64_t steps, const agent::LoopState& loop) override;
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;

 private:
  ToyQAgent(const Registry& registry, const agent::TrainConfig& config, std::vector<uint64_t> seeds,
            std::shared_ptr<nn::Backend> backend);
  void IterationKernels(bool captured) override;
  void GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) override;
  void TrainMinibatch() override;
  agent::AgentLanes::Play Play() override { return lanes_->ReplicasPlay(*learner_); }
  int64_t max_play_envs() const override { return learner_->options().max_act_batch; }
  void SaveLane(int lane, agent::CheckpointWriter& out) const override;
  void LoadLane(int lane, const agent::CheckpointReader& in) override;
  std::unique_ptr<agent::LaneAgent> MakeLike(std::vector<uint64_t> seeds) const override;
  void KeepLanes(const std::vector<int>& keep, agent::LaneAgent& next) const override;
  agent::RolloutArrays rollout();
  agent::EpsilonSchedule epsilon() const;

  int obs_dim_, num_actions_;
  std::unique_ptr<agent::ExploreOps> explore_ops_ = agent::MakeOps<agent::ExploreOps>(device_, stream());
  std::unique_ptr<agent::QLearner> learner_;
  Buffer<float> obs_, next_obs_, rewards_, next_values_, targets_, batch_obs_, batch_targets_;
  Buffer<int32_t> actions_, batch_actions_;
  Buffer<uint8_t> terminated_, truncated_;
};

}  // namespace cugym::testing
