#!/usr/bin/python3
"""gen_published_fixtures.py — small checkpoints in the published conventions
that tests/checkpoint/test_published.c loads, written independently of vla.c's
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

Each also carries the normalisation statistics its publisher stores with a
fine-tune (checkpoint/published_stats.c reads them):

  lerobot_pi05/   policy_preprocessor.json + policy_postprocessor.json
                  (DataProcessorPipeline.save_pretrained: steps with
                  registry_name, config, state_file) and the normaliser's
                  safetensors of "<feature>.<stat>" F32 tensors (image stats
                  [3,1,1] included), QUANTILES for state and action;
  openpi_pi05/    assets/<asset_id>/norm_stats.json for two asset ids (one
                  with a '/', as physical-intelligence/libero);
  groot_sharded/  experiment_cfg/metadata.json, tag new_embodiment, state
                  from two keys listed in modalities in another order than in
                  statistics, one degenerate channel (min == max).

Files are laid out by the public safetensors spec with struct+json; BF16
bytes come from torch (round to nearest even), F16 from numpy. expected.json
per fixture: for every policy tensor the float64 sum and sum of squares of
the values a correct loader must produce (the stored values decoded by
torch), and the config fields the loader must pick up; "norm": probe state
and action vectors with the values each publisher's formula gives (numpy,
float64: LeRobot's normalize_processor.py, openpi's transforms.py, GR00T's
state_action.py), and the widths, cameras and embodiment the loader must
report.

Run (after building build/vla):  /usr/bin/python3 tools/gen_published_fixtures.py
Out:  tests/checkpoint/data/published/  (~400 KB, committed)
"""
import json
import os
import shutil
import struct
import subprocess
import zlib

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "checkpoint", "data", "published")
VLA = os.path.join(ROOT, "build", "vla")


def inventory(config, state_dim=None, embodiments=None):
    path = os.path.join(ROOT, "configs", config + ".json")
    if state_dim or embodiments:  # the base preset as config.json widens it (max_state_dim, max_num_embodiments)
        c = json.load(open(path))
        if state_dim:
            c["action"]["state_dim"] = state_dim
        if embodiments:
            c["action_head"]["embodiments"] = embodiments
        path = os.path.join(OUT, "base.json")
        json.dump(c, open(path, "w"))
    out = subprocess.run([VLA, "policy", "info", "--config=" + path, "--params", "--json"], check=True,
                         capture_output=True, text=True).stdout
    if state_dim or embodiments:
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


def fixture(dirname, config, prefix, dtype_of, extra, tie, alias, shards, cfg_json, expect_cfg, state_dim=None,
            embodiments=None, norm=None):
    d = os.path.join(OUT, dirname)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    stored, expected = [], {}
    for name, shape in inventory(config, state_dim, embodiments):
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
                   "tied": bool(tie), "config": expect_cfg, "tensors": expected,
                   "norm": norm(d) if norm else None}, f)


# ---- normalisation statistics, as each publisher stores them ----------------

def dataset_stats(dim, seed, degenerate=None):
    """LeRobot-style per-channel statistics of a made-up signal (float32 values)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (500, dim)) * rng.uniform(0.5, 200, dim) + rng.uniform(-50, 300, dim)
    if degenerate is not None:
        x[:, degenerate] = 7.25
    f = lambda v: np.asarray(v, np.float32)
    return {"min": f(x.min(0)), "max": f(x.max(0)), "mean": f(x.mean(0)), "std": f(x.std(0)),
            "q01": f(np.quantile(x, 0.01, axis=0)), "q10": f(np.quantile(x, 0.10, axis=0)),
            "q50": f(np.quantile(x, 0.50, axis=0)), "q90": f(np.quantile(x, 0.90, axis=0)),
            "q99": f(np.quantile(x, 0.99, axis=0)), "count": np.array([500], np.float32)}


def probe(s):
    """A vector inside and slightly outside each channel's range."""
    lo, hi = s["min"].astype(np.float64), s["max"].astype(np.float64)
    return lo + (hi - lo) * np.linspace(-0.1, 1.1, len(lo))


def lerobot_quantiles(x, s, eps=1e-8):  # normalize_processor.py, QUANTILES
    q01, q99 = s["q01"].astype(np.float64), s["q99"].astype(np.float64)
    d = q99 - q01
    d = np.where(d == 0, eps, d)
    return 2 * (x - q01) / d - 1, (x + 1) / 2 * d + q01  # (normalised x, x read as a normalised action)


def openpi_quantiles(x, s):  # openpi transforms.Normalize / Unnormalize with use_quantiles
    q01, q99 = s["q01"].astype(np.float64), s["q99"].astype(np.float64)
    return (x - q01) / (q99 - q01 + 1e-6) * 2.0 - 1.0, (x + 1.0) / 2.0 * (q99 - q01 + 1e-6) + q01


def groot_min_max(x, s):  # gr00t/data/transform/state_action.py Normalizer("min_max")
    lo, hi = s["min"].astype(np.float64), s["max"].astype(np.float64)
    mask = lo != hi
    y = np.zeros_like(x)
    y[mask] = 2 * (x[mask] - lo[mask]) / (hi[mask] - lo[mask]) - 1
    return y, (x + 1) / 2 * (hi - lo) + lo


def groot_q99(x, s):  # Normalizer("q99"): a degenerate channel passes through, then everything is clipped
    lo, hi = s["q01"].astype(np.float64), s["q99"].astype(np.float64)
    mask = lo != hi
    y = x.copy()
    y[mask] = 2 * (x[mask] - lo[mask]) / (hi[mask] - lo[mask]) - 1
    return np.clip(y, -1, 1), (x + 1) / 2 * (hi - lo) + lo


def groot_mean_std(x, s):  # Normalizer("mean_std"): std == 0 passes through
    m, sd = s["mean"].astype(np.float64), s["std"].astype(np.float64)
    mask = sd != 0
    y = x.copy()
    y[mask] = (x[mask] - m[mask]) / sd[mask]
    return y, x * sd + m


def st_tensors(stats_by_key):
    out = []
    for key, st in stats_by_key.items():
        for stat, v in st.items():
            shape = [3, 1, 1] if key.startswith("observation.images.") else list(v.shape)
            data = v.astype("<i8" if v.dtype == np.int64 else "<f4").tobytes()
            out.append((key + "." + stat, "I64" if v.dtype == np.int64 else "F32", shape, data))
    return out


def lerobot_norm(d):
    state, action = dataset_stats(2, 11), dataset_stats(2, 12)
    image = {k: np.asarray([0.4, 0.5, 0.6], np.float32) for k in ("mean", "std", "min", "max")}
    stats = {"observation.images.base_0_rgb": image, "observation.state": state, "action": action}
    feats = {"observation.images.base_0_rgb": {"type": "VISUAL", "shape": [3, 224, 224]},
             "observation.state": {"type": "STATE", "shape": [2]}, "action": {"type": "ACTION", "shape": [2]}}
    norm_map = {"VISUAL": "IDENTITY", "STATE": "QUANTILES", "ACTION": "QUANTILES"}
    for side, step_name in (("preprocessor", "normalizer_processor"), ("postprocessor", "unnormalizer_processor")):
        steps = [{"registry_name": "rename_observations_processor", "config": {"rename_map": {}}},
                 {"registry_name": "to_batch_processor", "config": {}}]
        if side == "postprocessor":
            steps = []
        state_file = "policy_%s_step_%d_%s.safetensors" % (side, len(steps), step_name)
        steps.append({"registry_name": step_name, "config": {"eps": 1e-8, "features": feats, "norm_map": norm_map},
                      "state_file": state_file})
        steps.append({"registry_name": "device_processor", "config": {"device": "cpu", "float_dtype": None}})
        write_safetensors(os.path.join(d, state_file), st_tensors(stats))
        with open(os.path.join(d, "policy_%s.json" % side), "w") as f:
            json.dump({"name": "policy_" + side, "steps": steps}, f, indent=2)
    xs, xa = probe(state), probe(action)
    ys, _ = lerobot_quantiles(xs, state)
    _, ua = lerobot_quantiles(xa, action)
    return {"source": "lerobot", "state_width": 2, "action_width": 2, "cameras": 1, "embodiment": 0,
            "state": list(xs), "state_normalized": list(ys), "action_normalized": list(xa), "action": list(ua)}


def openpi_norm(d):
    out = None
    for asset, seed in (("physical-intelligence/libero", 21), ("pusht", 23)):
        state, action = dataset_stats(2, seed), dataset_stats(2, seed + 1)
        os.makedirs(os.path.join(d, "assets", asset))
        js = {"norm_stats": {"state": {k: state[k].tolist() for k in ("mean", "std", "q01", "q99")},
                             "actions": {k: action[k].tolist() for k in ("mean", "std", "q01", "q99")}}}
        with open(os.path.join(d, "assets", asset, "norm_stats.json"), "w") as f:
            json.dump(js, f, indent=2)
        if asset == "pusht":
            xs, xa = probe(state), probe(action)
            ys, _ = openpi_quantiles(xs, state)
            _, ua = openpi_quantiles(xa, action)
            out = {"source": "openpi", "want": "pusht", "assets": ["physical-intelligence/libero", "pusht"],
                   "state_width": 2, "action_width": 2, "cameras": 1, "embodiment": 0, "state": list(xs),
                   "state_normalized": list(ys), "action_normalized": list(xa), "action": list(ua)}
    return out


def groot_norm(d):
    arm, grip = dataset_stats(3, 31, degenerate=1), dataset_stats(1, 32)
    a_arm, a_grip = dataset_stats(1, 33), dataset_stats(1, 34)
    js = lambda s: {k: s[k].tolist() for k in ("min", "max", "mean", "std", "q01", "q99")}
    meta = {"new_embodiment": {
        "statistics": {"state": {"gripper": js(grip), "single_arm": js(arm)},
                       "action": {"gripper": js(a_grip), "single_arm": js(a_arm)}},
        "modalities": {"video": {"front": {"resolution": [640, 480], "channels": 3, "fps": 30.0}},
                       "state": {"single_arm": {"absolute": True, "rotation_type": None, "shape": [3],
                                                "continuous": True},
                                 "gripper": {"absolute": True, "rotation_type": None, "shape": [1], "continuous": True}},
                       "action": {"single_arm": {"absolute": True, "rotation_type": None, "shape": [1],
                                                 "continuous": True},
                                  "gripper": {"absolute": True, "rotation_type": None, "shape": [1],
                                              "continuous": True}}},
        "embodiment_tag": "new_embodiment"}}
    os.makedirs(os.path.join(d, "experiment_cfg"))
    with open(os.path.join(d, "experiment_cfg", "metadata.json"), "w") as f:
        json.dump(meta, f, indent=2)
    cat = lambda a, b: {k: np.concatenate([a[k], b[k]]) for k in ("min", "max", "mean", "std", "q01", "q99")}
    state, action = cat(arm, grip), cat(a_arm, a_grip)  # modalities order: single_arm, gripper
    xs, xa = probe(state), probe(action)
    ys, _ = groot_min_max(xs, state)
    _, ua = groot_min_max(xa, action)
    # GR00T's other two modes on the same probe (the reader uses min_max; normalize.c has all three)
    other = {}
    for mode, fn, pair in (("quantiles", groot_q99, ("q01", "q99")), ("mean_std", groot_mean_std, ("mean", "std"))):
        y, u = fn(xs, state)
        other[mode] = {"lo": state[pair[0]].tolist(), "hi": state[pair[1]].tolist(), "normalized": list(y),
                       "unnormalized": list(u)}
    return {"source": "groot", "state_width": 4, "action_width": 2, "cameras": 1, "embodiment": 31,
            "embodiment_name": "new_embodiment", "state": list(xs), "state_normalized": list(ys),
            "action_normalized": list(xa), "action": list(ua), "groot_modes": other}


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
            {"horizon": 6, "flow_steps": 5, "cameras": 2}, norm=lerobot_norm)
    fixture("openpi_pi05", "pi05-nano", "",
            lambda n: "F16" if n.startswith("time_mlp") else "BF16", [], tie, False, 1,
            {"action_dim": pi05["action"]["dim"], "action_horizon": 5, "max_token_len": pi05["language"]["max_tokens"],
             "paligemma_variant": "gemma_2b", "action_expert_variant": "gemma_300m", "pi05": True,
             "precision": "bfloat16"},
            {"horizon": 5, "flow_steps": pi05["flow"]["steps"], "cameras": pi05["vision"]["cameras"]},
            norm=openpi_norm)
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
                                 "max_state_dim": 4, "num_inference_timesteps": 3, "max_num_embodiments": 32}},
            {"horizon": groot["action"]["horizon"], "flow_steps": 3, "cameras": groot["vision"]["cameras"]},
            state_dim=4,  # 4: the state width of tests' reach dataset, which test_published.c fine-tunes on
            embodiments=32, norm=groot_norm)  # 32 rows, as N1.5: new_embodiment is row 31


if __name__ == "__main__":
    main()
