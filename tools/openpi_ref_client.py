#!/usr/bin/python3
"""openpi_ref_client.py — an openpi-style reference client for `vla serve`.

It encodes exactly as openpi_client does (openpi_client/msgpack_numpy.py:
msgpack with NumPy arrays as {b"__ndarray__": True, b"data": bytes,
b"dtype": str, b"shape": tuple} and NumPy scalars as {b"__npgeneric__": True,
b"data": item, b"dtype": str}, Python's msgpack with its defaults), using
Debian's python3-msgpack, python3-numpy and python3-websockets — none of
vla.c's code. Two uses:

  /usr/bin/python3 tools/openpi_ref_client.py goldens tests/serve/data
      writes the committed golden frames the C tests read: requests as an
      openpi client packs them (*.msgpack) with the values they hold
      (*.json), and replies packed from known values (reply_*.msgpack) that
      vla.c's writer must reproduce byte for byte.

  /usr/bin/python3 tools/openpi_ref_client.py fuzz-seeds fuzz/corpus/fuzz_serve_request
      writes seed requests for fuzz/fuzz_serve_request.c's tiny checkpoint
      (state 2 + 4 values, one 8x8 camera, RTC fields) beside the goldens.

  /usr/bin/python3 tools/openpi_ref_client.py client --host 127.0.0.1 --port 8000 \
      [--api_key KEY] [--requests 5] [--state 0.1,0.2] [--env_state …] [--delay D]
      connects like openpi_client.WebsocketClientPolicy (Authorization:
      Api-Key header, compression off, no size limit), reads the metadata
      frame, sends observations, and prints each reply's actions shape,
      first row and server_timing; exits 1 on a text (error) frame.

Knobs: none beyond the arguments; the goldens are deterministic.
"""
import argparse
import asyncio
import json
import os
import sys

import msgpack
import numpy as np


# ---- the reference encoding: the format openpi_client/msgpack_numpy.py defines -----------
# (written here from that format, not copied): ndarrays and NumPy scalars become
# maps with bytes keys; everything else is packed by msgpack as Python values.
NDARRAY, NPGENERIC = b"__ndarray__", b"__npgeneric__"


def encode_numpy(value):
    """msgpack `default` hook: NumPy values as openpi_client sends them."""
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "VOc":
            raise ValueError(f"openpi_client refuses dtype {value.dtype}")
        if isinstance(value, np.ndarray):  # keys in openpi's order: marker, data, dtype, shape
            return {NDARRAY: True, b"data": value.tobytes(), b"dtype": value.dtype.str, b"shape": value.shape}
        return {NPGENERIC: True, b"data": value.item(), b"dtype": value.dtype.str}
    return value


def decode_numpy(m):
    """msgpack `object_hook`: the inverse (read-only arrays over the frame's bytes)."""
    if NDARRAY in m:
        return np.frombuffer(m[b"data"], dtype=np.dtype(m[b"dtype"])).reshape(m[b"shape"])
    if NPGENERIC in m:
        return np.dtype(m[b"dtype"]).type(m[b"data"])
    return m


def packb(obj):
    return msgpack.packb(obj, default=encode_numpy)


def unpackb(data):
    return msgpack.unpackb(data, object_hook=decode_numpy)


# ---- goldens ------------------------------------------------------------------------------
def flat_values(obj, prefix=""):
    """The request as vla.c flattens it: key → {kind, dtype, shape, values}."""
    out = {}
    for k, v in obj.items():
        key = prefix + (k.decode() if isinstance(k, bytes) else k)
        if isinstance(v, dict):
            out.update(flat_values(v, key + "/"))
        elif isinstance(v, np.ndarray):
            out[key] = {"kind": "array", "dtype": v.dtype.str, "shape": list(v.shape),
                        "values": [float(x) for x in v.astype(np.float64).ravel()]}
        elif isinstance(v, np.generic):
            out[key] = {"kind": "scalar", "dtype": v.dtype.str, "values": [float(v)]}
        elif isinstance(v, bool):
            out[key] = {"kind": "bool", "values": [1.0 if v else 0.0]}
        elif isinstance(v, int):
            out[key] = {"kind": "int", "values": [float(v)]}
        elif isinstance(v, float):
            out[key] = {"kind": "float", "values": [v]}
        elif isinstance(v, str):
            out[key] = {"kind": "string", "text": v}
        elif isinstance(v, list):
            out[key] = {"kind": "list", "values": [float(x) for x in v]}
        else:
            raise TypeError(key)
    return out


def goldens(outdir):
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(33)
    requests = {
        # LeRobot keys, PushT-like (state-only), the way a robot beside vla.c would send them
        "req_pusht": {
            "observation.state": np.array([222.5, 301.25], dtype=np.float32),
            "observation.environment_state": rng.uniform(0, 512, 16).astype(np.float32),
            "task": "Push the T-shaped block onto the T-shaped target.",
        },
        # openpi's LIBERO example: slash keys, HWC uint8 images, float64 state, prompt
        "req_libero": {
            "observation/image": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
            "observation/wrist_image": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
            "observation/state": rng.normal(size=8),
            "prompt": "put the bowl on the plate",
        },
        # openpi's ALOHA example: nested maps
        "req_aloha": {
            "state": rng.normal(size=14).astype(np.float32),
            "images": {"cam_high": rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)},
            "prompt": "fold the towel",
        },
        # scalars of every kind, big-endian and narrow dtypes, a plain list, RTC fields
        "req_scalars": {
            "inference_delay": np.int64(2),
            "gain": np.float32(1.5),
            "flag": True,
            "count": 300,
            "neg": -5,
            "big": 2**40,
            "ratio": 0.125,
            "list": [1, 2.5, -3],
            "be": np.array([1.5, -2.0, 3.25], dtype=">f4"),
            "half": np.array([[0.5, -1.0], [65504.0, 0.0]], dtype=np.float16),
            "i16": np.array([-300, 7], dtype=np.int16),
            "u2": np.array([65535, 1], dtype=np.uint16),
            "mask": np.array([True, False, True]),
            "prev_chunk_left_over": np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2),
        },
    }
    for name, req in requests.items():
        with open(os.path.join(outdir, name + ".msgpack"), "wb") as f:
            f.write(packb(req))
        with open(os.path.join(outdir, name + ".json"), "w") as f:
            json.dump(flat_values(req), f, indent=1, sort_keys=True)
            f.write("\n")
    # replies, packed from known values as openpi's server packs its outputs
    actions = (np.arange(16, dtype=np.float32).reshape(8, 2) * 0.25 - 1.0).astype(np.float32)
    replies = {
        "reply_first": {"actions": actions, "server_timing": {"infer_ms": 12.5}},
        "reply_next": {"actions": actions, "server_timing": {"infer_ms": 3.0625, "prev_total_ms": 20.25}},
        "reply_metadata": {"policy": "groot", "action_dim": 2, "action_horizon": 8, "fps": 10.0,
                           "state_keys": ["observation.state", "observation.environment_state"],
                           "n_cameras": 0, "image_size": 0, "rtc": True},
    }
    for name, rep in replies.items():
        with open(os.path.join(outdir, name + ".msgpack"), "wb") as f:
            f.write(packb(rep))
    print(f"goldens written to {outdir}")


def fuzz_seeds(outdir):
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    base = {"observation/state": np.array([0.2, 0.7], dtype=np.float32),
            "observation.environment_state": np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32),
            "image": img, "prompt": "push"}
    seeds = {
        "ok": base,
        "history": dict(base, **{"observation/state": np.array([[0.1, 0.2], [0.3, 0.4]]),
                                 "observation.environment_state": np.zeros((2, 4), dtype=np.float16)}),
        "rtc": dict(base, prev_chunk_left_over=np.ones((3, 2), dtype=np.float32), inference_delay=np.int64(1),
                    execution_horizon=3, seed=np.uint64(9)),
        "nested": {"observation": {"state": [0.5, 0.5]}, "image": img, "task": b"bytes task"},
    }
    for name, req in seeds.items():
        with open(os.path.join(outdir, name + ".msgpack"), "wb") as f:
            f.write(packb(req))
    print(f"fuzz seeds written to {outdir}")


# ---- a live client -----------------------------------------------------------------------------
async def run_client(a):
    import websockets  # python3-websockets (10.x: the asyncio API)

    uri = f"ws://{a.host}:{a.port}"
    headers = {"Authorization": f"Api-Key {a.api_key}"} if a.api_key else None
    async with websockets.connect(uri, compression=None, max_size=None, extra_headers=headers) as ws:
        meta = unpackb(await ws.recv())
        print("metadata:", json.dumps({k: (v if not isinstance(v, np.ndarray) else v.tolist()) for k, v in meta.items()}))
        state = np.array([float(x) for x in a.state.split(",")], dtype=np.float32)
        obs = {"observation.state": state}
        if a.env_state:
            obs["observation.environment_state"] = np.array([float(x) for x in a.env_state.split(",")], dtype=np.float32)
        prev = None
        for i in range(a.requests):
            req = dict(obs)
            req["seed"] = np.int64(i)
            if a.delay and prev is not None:
                req["prev_chunk_left_over"] = prev[a.delay:]
                req["inference_delay"] = np.int64(a.delay)
            await ws.send(packb(req))
            rep = await ws.recv()
            if isinstance(rep, str):
                print("error frame:", rep)
                return 1
            out = unpackb(rep)
            acts = out["actions"]
            prev = acts
            print(f"reply {i}: actions {acts.dtype.str} {list(acts.shape)} first {acts[0].tolist()} "
                  f"server_timing {out['server_timing']}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("goldens")
    g.add_argument("outdir")
    fz = sub.add_parser("fuzz-seeds")
    fz.add_argument("outdir")
    c = sub.add_parser("client")
    c.add_argument("--host", default="127.0.0.1")
    c.add_argument("--port", type=int, default=8000)
    c.add_argument("--api_key")
    c.add_argument("--requests", type=int, default=5)
    c.add_argument("--state", default="256,256")
    c.add_argument("--env_state", default="")
    c.add_argument("--delay", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "goldens":
        goldens(a.outdir)
        return 0
    if a.cmd == "fuzz-seeds":
        fuzz_seeds(a.outdir)
        return 0
    return asyncio.run(run_client(a))


if __name__ == "__main__":
    sys.exit(main())
