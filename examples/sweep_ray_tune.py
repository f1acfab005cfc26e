"""An ASHA sweep of cugym's DQN on Ray Tune: learning rate, target update interval and seeds on
CartPole-v1 (or LunarLander-v3 where cugym was built with Box2D), printing the best config.

    pip install .[ray]                       # cugym with Ray Tune
    python examples/sweep_ray_tune.py        # on this machine (Ray starts a local cluster)
    python examples/sweep_ray_tune.py --address auto   # on a running cluster (docs/sweeps.md)

Every trial reports and checkpoints at each of cugym's evaluations (cugym.tune), so ASHA stops the
weak ones at its rungs and a failed trial resumes from its last report, exactly.
"""

import argparse
import math
import os
import tempfile

import cugym
import cugym.tune
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="CartPole-v1", help="CartPole-v1, Acrobot-v1, LunarLander-v3, ...")
    p.add_argument("--samples", type=int, default=4, help="learning rates drawn per grid cell")
    p.add_argument("--seeds", type=int, default=2, help="seeds per configuration")
    p.add_argument("--total-steps", type=int, default=None, help="env steps per trial (default: the env's config)")
    p.add_argument("--eval-interval", type=int, default=5000, help="env steps between evaluations (= reports)")
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--device", default="cpu")
    p.add_argument("--cpus-per-trial", type=float, default=1)
    p.add_argument("--address", default=None, help="a Ray cluster to join ('auto': the one started here)")
    p.add_argument("--storage", default=None, help="storage_path: shared by every node (default: a temporary folder)")
    a = p.parse_args()

    if a.env not in cugym.env_ids():
        raise SystemExit(f"sweep_ray_tune: this cugym has no {a.env} (built without Box2D?); try CartPole-v1")
    ray.init(address=a.address, include_dashboard=False, log_to_driver=False)
    space = {
        "env_id": a.env,
        "device": a.device,
        "learning_rate": tune.loguniform(5e-4, 5e-3),
        "target_update_interval": tune.grid_search([10, 100]),
        "seed": tune.grid_search(list(range(1, a.seeds + 1))),
        "eval_interval": a.eval_interval,
        "eval_episodes": a.eval_episodes,
        "stop_at_threshold": False,
    }
    if a.total_steps:
        space["total_steps"] = a.total_steps
    storage = a.storage or tempfile.mkdtemp(prefix="cugym-sweep-")
    tuner = tune.Tuner(
        tune.with_resources(cugym.tune.trainable, {"cpu": a.cpus_per_trial}),
        param_space=space,
        tune_config=tune.TuneConfig(
            metric="mean_return",
            mode="max",
            num_samples=a.samples,
            scheduler=ASHAScheduler(time_attr="training_iteration", grace_period=2, reduction_factor=2),
        ),
        run_config=tune.RunConfig(
            name="cugym_sweep",
            storage_path=os.path.abspath(storage),
            verbose=0,
            failure_config=tune.FailureConfig(max_failures=2),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        ),
    )
    grid = tuner.fit()
    finished = [r for r in grid if r.metrics and r.metrics.get("final")]
    print(f"{len(grid)} trials, {len(finished)} trained to the end, {grid.num_errors} failed; results in {storage}")
    best = grid.get_best_result(metric="mean_return", mode="max", scope="last")
    m = best.metrics
    cfg = {k: best.config[k] for k in ("learning_rate", "target_update_interval", "seed")}
    ttt = m.get("time_to_threshold", math.nan)
    print(
        f"best: {cfg} mean return {m['mean_return']:.1f} +- {m['std_error']:.1f} (s.e.) at {m['env_steps']} env steps"
        + ("" if math.isnan(ttt) else f", threshold after {ttt:.1f} s of training")
    )
    print(f"its run folder (model.safetensors when it trained to the end): {best.checkpoint.path}")


if __name__ == "__main__":
    main()
