#!/usr/bin/env python3
"""A file written by cugym loads with Python's `safetensors` package and gives the same numbers
(and metadata, and forward pass through NumPy); a file written by `safetensors` loads in cugym.

    safetensors_interop.py TOOL   (TOOL: the cugym_nn_safetensors_tool binary)

Exit 0 on success, 1 on a mismatch, 77 (ctest: skipped) when safetensors or numpy is missing.
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:
    print(f"skipped: {e} (pip install safetensors numpy)")
    sys.exit(77)

DTYPES = {"F32": np.float32, "I32": np.int32, "I64": np.int64}


def run(tool, *args):
    out = subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout
    meta, tensors, extra = {}, {}, {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "meta":
            meta[parts[1]] = parts[2]
        elif parts[0] == "tensor":
            _, name, dtype, dims, values = parts
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
            arr = np.array([float(v) if dtype == "F32" else int(v) for v in values.split()], dtype=DTYPES[dtype])
            tensors[name] = arr.reshape(shape)
        else:
            extra[parts[0]] = np.array([float(v) for v in parts[1].split()], dtype=np.float64)
    return meta, tensors, extra


def crc32c(data):
    # CRC-32C (reflected polynomial 0x82F63B78): the checksum cugym writes per tensor.
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def checksum_failures(path, metadata, loaded):
    # cugym.crc32c: one CRC-32C per tensor, in the order of the data offsets (docs/file-formats.md).
    with open(path, "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    names = sorted((n for n in header if n != "__metadata__"), key=lambda n: header[n]["data_offsets"])
    recorded = metadata.get("cugym.crc32c", "").split(",")
    computed = [f"{crc32c(np.ascontiguousarray(loaded[n]).tobytes()):08x}" for n in names]
    return [] if recorded == computed else [f"cugym.crc32c {recorded} != the tensors' {computed}"]


def same(a, b):
    # Bit-for-bit (float32 printed with 9 significant digits parses back exactly).
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def main():
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # cugym -> safetensors
        path = os.path.join(tmp, "cugym_model.safetensors")
        meta, expected, extra = run(tool, "write", path)
        loaded = load_file(path)
        if sorted(loaded) != sorted(expected):
            failures.append(f"tensor names {sorted(loaded)} != {sorted(expected)}")
        for name, arr in expected.items():
            if name in loaded and not same(loaded[name], arr):
                failures.append(
                    f"{name}: {loaded[name].dtype}{loaded[name].shape} differs from cugym's {arr.dtype}{arr.shape}"
                )
        with safe_open(path, framework="np") as f:
            # The checksums are metadata to Python; cugym's reader checks them and keeps them to itself.
            metadata = f.metadata()
            failures += checksum_failures(path, metadata, loaded)
            if {k: v for k, v in metadata.items() if k != "cugym.crc32c"} != meta:
                failures.append(f"metadata {metadata} != {meta}")
        # The forward pass of nn.Sequential(Linear, ReLU, Linear) on those weights, in float64.
        x = extra["input"].reshape(2, 4)
        h = np.maximum(x @ loaded["0.weight"].astype(np.float64).T + loaded["0.bias"], 0)
        y = h @ loaded["2.weight"].astype(np.float64).T + loaded["2.bias"]
        err = float(np.max(np.abs(y.ravel() - extra["forward"])))
        if err > 1e-5:
            failures.append(f"forward pass differs by {err}")
        print(f"cugym -> safetensors: {len(loaded)} tensors, metadata {len(meta)} keys, forward max error {err:.2e}")

        # A network with a convolution: conv.weight in PyTorch's [out, in, kh, kw] layout, computed
        # here as torch.nn.Conv2d does (NCHW), its output flattened in cugym's (y, x, c) order.
        path = os.path.join(tmp, "cugym_conv.safetensors")
        meta, expected, extra = run(tool, "write-conv", path)
        loaded = load_file(path)
        if sorted(loaded) != sorted(expected) or "conv.weight" not in loaded:
            failures.append(f"conv tensor names {sorted(loaded)} != {sorted(expected)}")
        elif loaded["conv.weight"].shape != (4, 3, 3, 3) or not same(loaded["conv.weight"], expected["conv.weight"]):
            failures.append(f"conv.weight {loaded['conv.weight'].shape} differs from cugym's")
        with safe_open(path, framework="np") as f:
            if f.metadata().get("cugym.conv") != "height=6,width=5,in_channels=3,out_channels=4,kernel=3":
                failures.append(f"conv metadata {f.metadata()}")
        if not failures:
            x = extra["input"].reshape(2, 6, 5, 3).transpose(0, 3, 1, 2)  # NHWC -> NCHW, as PyTorch takes it
            w, b = loaded["conv.weight"].astype(np.float64), loaded["conv.bias"]
            conv = np.zeros((2, 4, 4, 3))
            for oy in range(4):
                for ox in range(3):
                    window = x[:, :, oy : oy + 3, ox : ox + 3]
                    conv[:, :, oy, ox] = np.einsum("ncij,ocij->no", window, w) + b
            h = np.maximum(conv, 0).transpose(0, 2, 3, 1).reshape(2, -1)  # flattened (y, x, c)
            h = np.maximum(h @ loaded["0.weight"].astype(np.float64).T + loaded["0.bias"], 0)
            y = h @ loaded["2.weight"].astype(np.float64).T + loaded["2.bias"]
            err = float(np.max(np.abs(y.ravel() - extra["forward"])))
            if err > 1e-5:
                failures.append(f"conv network's forward pass differs by {err}")
            print(f"cugym conv -> safetensors: {len(loaded)} tensors, forward max error {err:.2e}")

        # safetensors -> cugym
        path = os.path.join(tmp, "python.safetensors")
        rng = np.random.default_rng(0)
        tensors = {
            "w": rng.standard_normal((3, 5)).astype(np.float32),
            "neg_zero_and_tiny": np.array([-0.0, 1e-40, np.inf, -3.5], dtype=np.float32),
            "steps": np.array([2**40, -1, 0], dtype=np.int64),
            "ids": np.array([[1, -2], [3, 2**31 - 1]], dtype=np.int32),
            "scalar": np.array(2.5, dtype=np.float32),
            "empty": np.zeros((0, 3), dtype=np.float32),
        }
        save_file(tensors, path, metadata={"writer": "python", "note": "tab-free text"})
        meta, got, _ = run(tool, "dump", path)
        if meta != {"writer": "python", "note": "tab-free text"}:
            failures.append(f"cugym read metadata {meta}")
        for name, arr in tensors.items():
            if name not in got or not same(got[name], arr):
                failures.append(f"cugym read {name} as {got.get(name)!r}, expected {arr!r}")
        print(f"safetensors -> cugym: {len(got)} tensors")

    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
