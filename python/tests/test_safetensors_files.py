"""cugym's safetensors files in Python's `safetensors` package: loaded unchanged, checksums and all.

Every file cugym writes carries a CRC-32C per tensor under the metadata key `cugym.crc32c`
(docs/file-formats.md); to other readers it is ordinary metadata. The checksums are recomputed
here from the bytes `safetensors` gives back, with a CRC-32C written out in Python (the standard
library has none).
"""

import json

import cugym
import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")
from safetensors.numpy import load_file  # noqa: E402


def _crc32c(data: bytes) -> int:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def test_crc32c_check_value():
    assert _crc32c(b"123456789") == 0xE3069283


def test_cugym_files_load_in_safetensors(tmp_path):
    run = tmp_path / "run"
    cugym.train(
        env_id="CartPole-v1",
        out=run,
        device="cpu",
        total_steps=1000,
        learning_starts=500,
        eval_episodes=2,
        eval_interval=500,
        checkpoint_interval=500,
        save_replay=False,  # a small checkpoint: the pure-Python CRC reads every byte
        stop_at_threshold=False,
        progress=False,
    )
    checkpoint = sorted((run / "checkpoints").glob("step_*.safetensors"))[-1]
    for path in (run / "model.safetensors", run / "best.safetensors", checkpoint):
        tensors = load_file(path)
        with safetensors.safe_open(path, framework="numpy") as f:
            metadata = f.metadata()
            names = list(f.keys())
        assert metadata["cugym.env_id"] == "CartPole-v1"
        # The header's order of data offsets is the order of the checksums.
        raw = path.read_bytes()
        header_len = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8 : 8 + header_len])
        in_file_order = sorted(names, key=lambda n: tuple(header[n]["data_offsets"]))
        checksums = metadata["cugym.crc32c"].split(",")
        assert len(checksums) == len(in_file_order)
        for name, recorded in zip(in_file_order, checksums):
            assert int(recorded, 16) == _crc32c(np.ascontiguousarray(tensors[name]).tobytes()), (path.name, name)
