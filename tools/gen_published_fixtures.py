#!/usr/bin/python3
"""gen_published_fixtures.py — small checkpoints in the published conventions
that tests/train/test_published.c loads, written independently of vla.c's
safetensors writer and dtype conversion.

Each fixture is a nano-sized policy (configs/pi05-nano.json,
configs/groot-nano.json: the same tensor names as the full models, which
test_published.c checks against the published listings) saved the way its
publisher saves the full one:

  lerobot_pi05/   LeRobot PI05Policy.save_pretrained of a bf16 fine-tune:
                  one model.safetensors, every name prefixed "model.",
                  BF16 except norms/embeddings-like tensors kept F32 (as
                  LeRobot's bf16 fine-tunes), Gemma's token embedding stored
                  once as paligemma.lm_head with the embed_tokens name as an
                  __metadata__ alias, the expert's unused lm_head present;
                  config.json in LeRobot's fields (type, chunk_size, …).
  openpi_pi05/    openpi's JAX→PyTorch conversion: no prefix, BF16 with a
                  few F16 tensors, lm_head stored with no alias (the tie is
                  implicit), config.json with Pi0Config fields.
  groot_sharded/  Isaac-GR00T N1.5: two shards + model.safetensors.index.json,
                  BF16, SigLIP's pooling head and Qwen3's lm_head present
                  (unused), config.json with model_type gr00t_n1_5.

Files are laid out by the public safetensors spec with struct+json; BF16
bytes come from torch (round to nearest even), F16 from numpy. expected.json
per fixture: for every policy tensor the float64 sum and sum of squares of
the values a correct loader must produce (the stored values decoded by
torch), and the config fields the loader must pick up.

Run (after building build/vla):  /usr/bin/python3 tools/gen_published_fixtures.py
Out:  tests/train/data/published/  (~400 KB, committed)
"""
import json
import os
import struct
import subprocess
import zlib

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "train", "data", "published")
VLA = os.path.join(ROOT, "build", "vla")


def inventory(config, state_dim=None):
    path = os.path.join(ROOT, "configs", config + ".json")
    if state_dim:  # the base preset with a wider padded state (max_state_dim in config.json)
        c = json.load(open(path))
        c["action"]["state_dim"] = state_dim
        path = os.path.join(OUT, "base.json")
        json.dump(c, open(path, "w"))
    out = subprocess.run([VLA, "policy", "info", "--config=" + path, "--params", "--json"], check=True,
                         capture_output=True, text=True).stdout
    if state_dim:
        os.remove(path)
    return [(p["name"], p["shape"]) for p in json.loads(out)["params"]]


def values(name, shape):
    """Deterministic per-name values, a few with magnitudes bf16 rounds visibly."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return (rng.standard_normal(int(np.prod(shape))) * 0.05).astype(np.float32).reshape(shape)


def encode(arr, dtype):
    """(bytes, decoded float32 values) of `arr` stored as dtype."""
    if dtype == "F32":
        return arr.astype("<f4").tobytes(), arr.astype(np.float32)
    if dtype == "F16":
        h = arr.astype("<f2")
        return h.tobytes(), h.astype(np.float32)
    if dtype == "BF16":
        t = torch.from_numpy(arr.copy()).to(torch.bfloat16)
        return t.view(torch.int16).numpy().astype("<i2").tobytes(), t.to(torch.float32).numpy()
    if dtype == "I32":
        return arr.astype("<i4").tobytes(), None
    raise ValueError(dtype)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes), laid out in the given order."""
    header, off = {}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, data in tensors:
            f.write(data)


def stats(decoded):
    d = decoded.astype(np.float64).ravel()
    return [float(d.sum()), float((d * d).sum()), float(d[0])]


def keep_f32_in_lerobot_bf16(name):
    # LeRobot's bf16 fine-tunes keep these in F32 (shared/reference listing, 4th column)
    return ("norm" in name or "patch_embedding" in name or "position_embedding" in name or ".dense." in name
            or name.startswith(("action_in_proj", "action_out_proj", "time_mlp")))


def fixture(dirname, config, prefix, dtype_of, extra, tie, alias, shards, cfg_json, expect_cfg, state_dim=None):
    d = os.path.join(OUT, dirname)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    stored, expected = [], {}
    for name, shape in inventory(config, state_dim):
        arr = values(name, shape)
        dtype = dtype_of(name)
        if tie and name == tie[0]:
            data, dec = encode(arr, dtype)
            stored.append((prefix + tie[1], dtype, shape, data))
        else:
            data, dec = encode(arr, dtype)
            stored.append((prefix + name, dtype, shape, data))
        expected[name] = stats(dec)
    for name, shape in extra:
        data, _ = encode(values(name, shape), "BF16")
        stored.append((prefix + name, "BF16", shape, data))
    meta = {"format": "pt"}
    if tie and alias:
        meta[prefix + tie[0]] = prefix + tie[1]
    if shards == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), stored, meta)
    else:
        per = (len(stored) + shards - 1) // shards
        weight_map = {}
        for i in range(shards):
            part = stored[i * per:(i + 1) * per]
            fname = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
            write_safetensors(os.path.join(d, fname), part, meta)
            for t in part:
                weight_map[t[0]] = fname
        total = sum(len(t[3]) for t in stored)
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg_json, f, indent=2)
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"base": config, "prefix": prefix, "files": shards, "extra_unused": len(extra),
                   "tied": bool(tie), "config": expect_cfg, "tensors": expected}, f)


def main():
    tie = ("paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight",
           "paligemma_with_expert.paligemma.lm_head.weight")
    pi05 = json.load(open(os.path.join(ROOT, "configs", "pi05-nano.json")))
    groot = json.load(open(os.path.join(ROOT, "configs", "groot-nano.json")))
    W, We = pi05["language"]["width"], pi05["expert"]["width"]
    fixture("lerobot_pi05", "pi05-nano", "model.", lambda n: "F32" if keep_f32_in_lerobot_bf16(n) else "BF16",
            [("paligemma_with_expert.gemma_expert.lm_head.weight", [pi05["language"]["vocab"], We])], tie, True, 1,
            {"type": "pi05", "n_obs_steps": 1, "chunk_size": 6, "n_action_steps": 6,
             "max_state_dim": pi05["action"]["state_dim"], "max_action_dim": pi05["action"]["dim"],
             "num_inference_steps": 5, "tokenizer_max_length": pi05["language"]["max_tokens"],
             "paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m", "dtype": "bfloat16",
             "input_features": {"observation.images.base_0_rgb": {"type": "VISUAL", "shape": [3, 224, 224]},
                                "observation.images.left_wrist_0_rgb": {"type": "VISUAL", "shape": [3, 224, 224]},
                                "observation.state": {"type": "STATE", "shape": [pi05["action"]["state_dim"]]}},
             "output_features": {"action": {"type": "ACTION", "shape": [pi05["action"]["dim"]]}}},
            {"horizon": 6, "flow_steps": 5, "cameras": 2})
    fixture("openpi_pi05", "pi05-nano", "",
            lambda n: "F16" if n.startswith("time_mlp") else "BF16", [], tie, False, 1,
            {"action_dim": pi05["action"]["dim"], "action_horizon": 5, "max_token_len": pi05["language"]["max_tokens"],
             "paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m", "pi05": True,
             "precision": "bfloat16"},
            {"horizon": 5, "flow_steps": pi05["flow"]["steps"], "cameras": pi05["vision"]["cameras"]})
    Wv, Wl = groot["vision"]["width"], groot["language"]["width"]
    siglip_head = [("backbone.eagle_model.vision_model.vision_model.head.probe", [1, 1, Wv]),
                   ("backbone.eagle_model.vision_model.vision_model.head.attention.in_proj_weight", [3 * Wv, Wv]),
                   ("backbone.eagle_model.vision_model.vision_model.head.attention.in_proj_bias", [3 * Wv]),
                   ("backbone.eagle_model.vision_model.vision_model.head.layernorm.weight", [Wv]),
                   ("backbone.eagle_model.language_model.lm_head.weight", [groot["language"]["vocab"], Wl])]
    fixture("groot_sharded", "groot-nano", "", lambda n: "BF16", siglip_head, None, False, 2,
            {"architectures": ["GR00T_N1_5"], "model_type": "gr00t_n1_5", "action_horizon": groot["action"]["horizon"],
             "backbone_cfg": {"select_layer": groot["language"]["depth"], "tune_llm": False, "tune_visual": True},
             "action_head_cfg": {"action_dim": groot["action"]["dim"], "max_action_dim": groot["action"]["dim"],
                                 "max_state_dim": 4, "num_inference_timesteps": 3}},
            {"horizon": groot["action"]["horizon"], "flow_steps": 3, "cameras": groot["vision"]["cameras"]},
            state_dim=4)  # 4: the state width of tests' reach dataset, which test_published.c fine-tunes on


if __name__ == "__main__":
    main()
