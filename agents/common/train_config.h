// A training run's config, for every agent (algo: "dqn" by default, "pqn", "ppo", "sac" or a
// registered one): the keys and their defaults, TOML files (configs/*.toml), --set overrides,
// validation that names the offending key (through the registry for what each algorithm reads),
// and the config written back as TOML. Where a run's config comes from, the shipped configs
// included, is agents/run/config_source.h. docs/dqn.md, pqn.md, ppo.md and sac.md say which keys
// each agent reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/toml.h"

namespace cugym::agent {

// Defaults are configs/cartpole.toml's: CartPole-v1 solved in seconds on a CPU.
struct TrainConfig {
  // "dqn" (replay memory, target network), "pqn" (rollouts, Q(lambda)), "ppo" (rollouts, an actor
  // and a critic) or "sac" (replay memory, a squashed Gaussian actor, twin critics)
  std::string algo = "dqn";
  std::string env_id = "CartPole-v1";
  uint64_t seed = 1;
  int64_t num_envs = 8;         // envs stepped together
  int64_t total_steps = 60000;  // env steps (transitions) over all envs
  std::vector<int> hidden_sizes = {120, 84};
  // > 0: a 3 x 3 convolution with this many channels (ReLU) in front of the hidden layers, for
  // image observations (H, W, C) such as MinAtar's; 0: none, the observations go to the MLP as is.
  int64_t conv_channels = 0;
  double learning_rate = 2.3e-3;
  double adam_eps = 1e-8;
  int64_t buffer_size = 50000;  // transitions kept
  int64_t batch_size = 64;
  double gamma = 0.99;
  int64_t n_step = 1;                   // rewards summed before bootstrapping (n-step returns)
  double tau = 0.05;                    // 1: hard copy; < 1: Polyak averaging
  int64_t target_update_interval = 10;  // env steps between target updates
  double start_e = 1.0;                 // epsilon schedule, linear in env steps
  double end_e = 0.05;
  double exploration_fraction = 0.16;    // of total_steps spent going from start_e to end_e
  double exploration_hold_mu = 0.0;      // > 1: ez-greedy, random actions held P(n >= k) = k^(1-mu); 0: off
  int64_t exploration_max_hold = 10000;  // cap on one hold, in env steps
  int64_t learning_starts = 1000;        // env steps before the first gradient step
  bool anneal_lr = false;                // learning rate falls linearly to 0 by the last update
  double replay_ratio = 0.5;             // gradient steps per env step (CleanRL: 0.1)
  std::string loss = "mse";              // mse (CleanRL) or huber (SB3)
  bool double_dqn = false;
  bool dueling = false;                 // dueling head: Q = V + A - mean(A) (Wang et al. 2016)
  bool prioritized_replay = false;      // draw by priority (|TD error| + per_eps)^per_alpha (Schaul et al. 2016)
  double per_alpha = 0.6;               // priority exponent: 0 is uniform
  double per_beta = 0.4;                // importance-weight exponent at the start, annealed to 1 by the last update
  double per_eps = 1e-6;                // added to |TD error| so no stored transition has priority 0
  double max_grad_norm = 0.0;           // 0: no clipping
  bool cuda_graph = true;               // CUDA: replay each iteration (else each gradient step) as a graph
  int64_t log_interval = 2000;          // env steps between metrics.csv rows
  bool tensorboard = true;              // TensorBoard event files beside metrics.csv (docs/tensorboard.md)
  int64_t checkpoint_interval = 20000;  // env steps between checkpoints; 0: only at the end
  int64_t keep_checkpoints = 3;
  bool save_replay = true;         // checkpoints hold the replay memory (exact resume); false
                                   // for very large buffers: a resumed run refills it first
  int64_t eval_episodes = 100;     // greedy episodes per evaluation, during training and at the end (0: none)
  int64_t eval_interval = 10000;   // env steps between evaluations during training (> 0)
  bool stop_at_threshold = false;  // end the run at the first evaluation that reaches the env's threshold
  // With stop_at_threshold: the evaluation's mean must clear the threshold by this many standard
  // errors (std / sqrt(episodes)); 0 stops at the first mean that reaches it.
  double stop_margin = 0.0;
  bool layer_norm = false;  // a LayerNorm before every hidden ReLU (PQN's network; DQN may use it too)

  // PQN (algo = "pqn", Gallici et al. 2025): rollouts of num_envs x num_steps transitions,
  // Q(lambda) targets from the network before its updates, num_epochs passes of num_minibatches
  // minibatches over them; no replay memory, no target network.
  int64_t num_steps = 64;          // env steps per env in a rollout
  int64_t num_epochs = 4;          // passes over each rollout
  int64_t num_minibatches = 16;    // per pass; num_envs * num_steps must be a multiple
  double q_lambda = 0.65;          // 0: one-step Q-learning targets, 1: Monte Carlo returns
  double reward_scale = 1.0;       // rewards are multiplied by this in the targets (purejaxql's REW_SCALE)
  std::string optimizer = "adam";  // "adam" or "radam" (PQN's); every agent reads it

  // PPO (algo = "ppo", docs/ppo.md): rollouts of num_envs x num_steps, GAE(gae_lambda) advantages,
  // num_epochs passes of num_minibatches minibatches of the clipped objective; num_envs, num_steps,
  // num_epochs, num_minibatches, learning_rate, anneal_lr, gamma and max_grad_norm (the joint norm
  // of the actor's, the critic's and log_std's gradients) as above. CleanRL's ppo.py's defaults.
  double gae_lambda = 0.95;
  double clip_coef = 0.2;         // the ratio's clip, and the value's with clip_vloss
  bool clip_vloss = true;         // clip the value loss around the rollout's values
  double ent_coef = 0.01;         // entropy bonus
  double vf_coef = 0.5;           // value loss weight
  bool norm_adv = true;           // advantages normalized per minibatch
  std::string policy = "auto";    // "categorical" (Discrete), "gaussian" (Box); auto: the action space's
  bool squash = false;            // gaussian: the env gets tanh(u) rescaled to the Box, not u clipped
  double init_log_std = 0.0;      // gaussian: the log standard deviation's start
  bool normalize_obs = false;     // running mean and variance of the observations (clipped at +-10)
  bool normalize_reward = false;  // rewards scaled by the discounted return's running std (clipped at +-10)
  double target_kl = 0.0;         // > 0: an iteration's epochs stop once approx_kl exceeds it; 0: off

  // SAC (algo = "sac", docs/sac.md): a replay memory as DQN's (buffer_size, batch_size,
  // learning_starts with uniform random actions before it, replay_ratio gradient steps per env
  // step, tau for both target critics after every critic update, gamma); learning_rate is the
  // critics' and the temperature's, policy_lr the actor's. CleanRL's sac_continuous_action.py's defaults.
  double policy_lr = 3e-4;
  int64_t policy_frequency = 2;          // critic updates per actor update; each takes this many actor steps
  double alpha = 0.2;                    // the entropy temperature's start (fixed without autotune)
  bool autotune = true;                  // learn the temperature so that the entropy nears the target
  double target_entropy_per_dim = -1.0;  // the target entropy, per action dimension (-|A| in all)
  double noise_correlation = 0.0;        // acting noise per env as AR(1) with this rho (0: white, CleanRL's)

  // The keys an algorithm registers of its own (Algorithm::keys, algorithm.h), as set; Own reads
  // one, its registered default where it is not set.
  TomlTable own;
  const TomlValue& Own(const std::string& key) const;

  // Applies every key of `table`; throws std::invalid_argument naming an unknown key or a value
  // of the wrong type.
  void Apply(const TomlTable& table);
  // Checks each key's range (learning_rate > 0, gamma in [0, 1], ...), the keys only other
  // algorithms read, then the algorithm's own checks (Algorithm::check: batch_size <= buffer_size,
  // ...); throws std::invalid_argument naming the key.
  void Validate() const;
  std::string ToToml() const;
  // The gradient steps a run from step 0 takes (Algorithm::planned_updates: the off-policy family's
  // and the on-policy family's count). Learning-rate annealing and prioritized replay's beta
  // schedule span them.
  int64_t PlannedUpdates() const;
  bool pqn() const { return algo == "pqn"; }
  bool ppo() const { return algo == "ppo"; }
  bool sac() const { return algo == "sac"; }
  // PQN and PPO: transitions per rollout (num_envs * num_steps) and rows per minibatch.
  int64_t rollout_size() const { return num_envs * num_steps; }
  int64_t minibatch_size() const { return rollout_size() / num_minibatches; }
};

// Throws std::invalid_argument "KEY RULE, got VALUE" unless `ok`, the number as Validate shows
// numbers: for an algorithm's checks (Algorithm::check).
void RequireKey(bool ok, const std::string& key, const std::string& rule, double value);
void RequireKey(bool ok, const std::string& key, const std::string& rule, const std::string& value);
// `x` as Validate shows numbers (shortest of 6 significant digits).
std::string ShowNumber(double x);

}  // namespace cugym::agent
