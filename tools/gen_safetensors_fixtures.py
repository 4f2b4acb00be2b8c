#!/usr/bin/python3
"""gen_safetensors_fixtures.py — writes the safetensors files that
tests/io/test_safetensors.c reads, from an implementation independent of
src/io/safetensors.c.

Debian's python3-torch (1.13) has neither float8 dtypes nor the safetensors
package, so the files are laid out here by the public spec with struct+json;
tensor bytes come from numpy (f32, f16, ints) and torch (bf16), and FP8 bytes
from a small pure-Python encoder that picks the nearest of the 256 decoded
codes (ties to even). Also writes deliberately bad files and expected.json,
which lists every tensor's raw element bits and f32 value, and for each bad
file the status and a substring the error message must contain.

Run:  /usr/bin/python3 tools/gen_safetensors_fixtures.py
Out:  tests/io/data/safetensors/  (a few KB, committed)
"""
import json
import math
import os
import struct

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io", "data", "safetensors")


# ---- FP8 (Micikevicius et al. 2022), decoded from the definition ----------
def e4m3_decode(b):
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 0x7
    if e == 0xF and m == 0x7:
        return math.nan
    if e == 0:
        return s * (m / 8.0) * 2.0 ** -6
    return s * (1.0 + m / 8.0) * 2.0 ** (e - 7)


def e5m2_decode(b):
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 2) & 0x1F, b & 0x3
    if e == 0x1F:
        return s * math.inf if m == 0 else math.nan
    if e == 0:
        return s * (m / 4.0) * 2.0 ** -14
    return s * (1.0 + m / 4.0) * 2.0 ** (e - 15)


def fp8_encode(x, decode):
    """Nearest finite code, ties to the even code; NaN to the canonical NaN."""
    if math.isnan(x):
        return 0x7F
    best = None
    for b in range(256):
        v = decode(b)
        if math.isnan(v) or math.isinf(v):
            continue
        if v == 0.0 and (b & 0x80) != (0x80 if math.copysign(1.0, x) < 0 else 0):
            continue  # keep the sign of zero
        key = (abs(v - x), b & 1)
        if best is None or key < best[0]:
            best = (key, b)
    return best[1]


# ---- tensors ------------------------------------------------------------
def f32_json(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor(dtype, shape, raw, bits, values):
    return {"dtype": dtype, "shape": list(shape), "raw": raw, "bits": [int(b) for b in bits],
            "f32": [f32_json(v) for v in values]}


def make_tensors():
    t = {}
    f32 = np.array([1.5, -0.0, 3.4028234663852886e38, 1e-40, math.pi, -2.5], dtype="<f4").reshape(2, 3)
    t["f32"] = tensor("F32", f32.shape, f32.tobytes(), f32.view("<u4").ravel(), f32.ravel())

    bf = torch.tensor([1.0, -2.75, 3.0e38, 1.0e-39, 0.1], dtype=torch.float32).to(torch.bfloat16)
    t["bf16"] = tensor("BF16", bf.shape, bf.view(torch.int16).numpy().astype("<i2").tobytes(),
                       bf.view(torch.int16).numpy().view("<u2"), bf.float().tolist())

    f16 = np.array([[0.5, -65504.0], [6e-8, np.inf]], dtype="<f2")
    t["f16"] = tensor("F16", f16.shape, f16.tobytes(), f16.view("<u2").ravel(), f16.astype(np.float32).ravel())

    for name, dt, dec, vals in [
        ("f8_e4m3", "F8_E4M3", e4m3_decode, [0.0, -0.0, 1.0, -1.75, 448.0, 0.013671875, 2.0 ** -9, 0.3]),
        ("f8_e5m2", "F8_E5M2", e5m2_decode, [0.0, 1.0, -3.0, 57344.0, 2.0 ** -16, 1.0e-5, 0.3, -0.0]),
    ]:
        codes = [fp8_encode(v, dec) for v in vals]
        t[name] = tensor(dt, [len(codes)], bytes(codes), codes, [dec(c) for c in codes])

    i64 = np.array([0, -1, 2 ** 40 + 3, -(2 ** 62)], dtype="<i8")
    t["i64"] = tensor("I64", i64.shape, i64.tobytes(), i64, i64.astype(np.float32))
    i32 = np.array([[7, -8], [2 ** 31 - 1, -(2 ** 31)]], dtype="<i4")
    t["i32"] = tensor("I32", i32.shape, i32.tobytes(), i32.ravel(), i32.astype(np.float32).ravel())
    u8 = np.array([0, 1, 128, 255], dtype="u1")
    t["u8"] = tensor("U8", u8.shape, u8.tobytes(), u8, u8.astype(np.float32))

    sc = np.array(42.5, dtype="<f4")
    t["scalar"] = tensor("F32", [], sc.tobytes(), [sc.view("<u4")], [sc])
    t["empty"] = tensor("F32", [0, 3], b"", [], [])
    return t


# The reference implementation lays tensors out by descending dtype (its enum
# is in alignment order), then by name.
RANK = {"U8": 0, "F8_E5M2": 1, "F8_E4M3": 2, "F16": 3, "BF16": 4, "I32": 5, "F32": 6, "I64": 7}


def write_file(path, tensors, metadata, order, pad=True, compact=True, key_order=("dtype", "shape", "data_offsets"),
               metadata_last=False):
    header, data, offsets = {}, b"", {}
    for name in order:
        raw = tensors[name]["raw"]
        offsets[name] = [len(data), len(data) + len(raw)]
        data += raw
    entries = []
    if metadata is not None and not metadata_last:
        entries.append(("__metadata__", dict(sorted(metadata.items()))))
    for name in order:
        info = {"dtype": tensors[name]["dtype"], "shape": tensors[name]["shape"], "data_offsets": offsets[name]}
        entries.append((name, {k: info[k] for k in key_order}))
    if metadata is not None and metadata_last:
        entries.append(("__metadata__", metadata))
    header = dict(entries)
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":") if compact else (", ", ": ")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return offsets


def raw_file(path, header_bytes, data=b"", n=None):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes) if n is None else n) + header_bytes + data)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".safetensors") or f == "expected.json":
            os.remove(os.path.join(OUT, f))
    t = make_tensors()
    meta = {"format": "pt", "note": "h\u00e9llo \u2713 \"quoted\"", "empty": ""}
    expected = {"valid": {}, "bad": []}

    def record(fname, names, offsets, metadata):
        expected["valid"][fname] = {
            "metadata": metadata or {},
            "tensors": {n: {"dtype": t[n]["dtype"], "shape": t[n]["shape"], "data_offsets": offsets[n],
                            "bits": t[n]["bits"], "f32": t[n]["f32"]} for n in names}}

    # 1. Laid out exactly as the reference writes (and as vla's writer must,
    #    byte for byte): compact JSON, metadata first, padded, aligned.
    names = sorted(t, key=lambda n: (-RANK[t[n]["dtype"]], n))
    offs = write_file(os.path.join(OUT, "all_dtypes.safetensors"), t, meta, names)
    record("all_dtypes.safetensors", names, offs, meta)

    # 2. A foreign layout: no padding, spaced JSON, other key order, metadata
    #    last, tensors in reverse name order with a 3-byte U8 tensor first so
    #    that the multi-byte tensors after it are unaligned in the mapping.
    t["odd"] = tensor("U8", [3], bytes([9, 8, 7]), [9, 8, 7], [9.0, 8.0, 7.0])
    names2 = ["odd"] + sorted([n for n in t if n != "odd"], reverse=True)
    offs = write_file(os.path.join(OUT, "unaligned.safetensors"), t, {"k": "v"}, names2, pad=False,
                      compact=False, key_order=("data_offsets", "dtype", "shape"), metadata_last=True)
    record("unaligned.safetensors", names2, offs, {"k": "v"})
    del t["odd"]

    # 3. No tensors, no metadata (the reference's serialisation of {}).
    offs = write_file(os.path.join(OUT, "empty.safetensors"), {}, None, [])
    record("empty.safetensors", [], offs, None)

    # ---- bad files: (file, status, substring of the message) ------------
    def bad(fname, status, msg, header=None, data=b"", n=None, raw=None):
        path = os.path.join(OUT, fname)
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            raw_file(path, header, data, n)
        expected["bad"].append({"file": fname, "status": status, "message": msg})

    def hdr(obj):
        return json.dumps(obj, separators=(",", ":")).encode()

    one = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    d8 = struct.pack("<2f", 1.0, 2.0)
    bad("bad_too_short.safetensors", "format", "too short for the 8-byte header length", raw=b"\x10\x00\x00\x00\x00")
    bad("bad_header_past_eof.safetensors", "format", "header length 1000 runs past the end of the file",
        hdr(one), d8, n=1000)
    bad("bad_header_too_large.safetensors", "format", "header length 200000000 exceeds the limit",
        hdr(one), d8, n=200000000)
    bad("bad_overlap.safetensors", "format", "overlap",
        hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}), d8 + d8[:4])
    bad("bad_hole.safetensors", "format", "bytes [4, 8) of the data region belong to no tensor",
        hdr({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
             "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}), d8 + d8[:4])
    bad("bad_trailing.safetensors", "format", "bytes [8, 12) at the end of the data region belong to no tensor",
        hdr(one), d8 + b"\0\0\0\0")
    bad("bad_offset_range.safetensors", "format", "data_offsets [0, 16) run past the end of the 8-byte data region",
        hdr({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}), d8)
    bad("bad_offsets_reversed.safetensors", "format", "data_offsets [8, 0) end before they begin",
        hdr({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}), d8)
    bad("bad_unknown_dtype.safetensors", "format", "tensor 'w': unknown dtype 'F33'",
        hdr({"w": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}), d8)
    bad("bad_unsupported_dtype.safetensors", "unsupported", "tensor 'w': dtype 'F64' is not supported",
        hdr({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}), d8)
    bad("bad_shape_mismatch.safetensors", "format",
        "tensor 'w': data_offsets [0, 24) but shape [2, 4] of F32 needs 32 bytes",
        hdr({"w": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 24]}}), d8 * 3)
    bad("bad_shape_overflow.safetensors", "format", "overflows",
        hdr({"w": {"dtype": "F32", "shape": [2 ** 62, 2 ** 62], "data_offsets": [0, 8]}}), d8)
    bad("bad_negative_dim.safetensors", "format", "shape[0] must be a non-negative integer",
        hdr({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}), d8)
    bad("bad_rank.safetensors", "format", "rank 9 exceeds the maximum of 8",
        hdr({"w": {"dtype": "F32", "shape": [1] * 7 + [2, 1], "data_offsets": [0, 8]}}), d8)
    bad("bad_missing_dtype.safetensors", "format", "'dtype' is missing",
        hdr({"w": {"shape": [2], "data_offsets": [0, 8]}}), d8)
    bad("bad_not_utf8.safetensors", "format", "header is not valid UTF-8",
        b'{"w\xff":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', d8)
    bad("bad_overlong_utf8.safetensors", "format", "header is not valid UTF-8",
        b'{"w\xc0\xaf":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', d8)
    bad("bad_json.safetensors", "format", "header is not valid JSON", b'{"w":{"dtype":"F32","shape":[2],', d8)
    bad("bad_duplicate.safetensors", "format", "duplicate",
        b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        d8)
    bad("bad_not_object.safetensors", "format", "header must be a JSON object", b"[1, 2]", b"")
    bad("bad_metadata_value.safetensors", "format", "'__metadata__' value of 'epoch' must be a string",
        hdr({"__metadata__": {"epoch": 3}, **one}), d8)

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        for v in expected["valid"].values():
            for tt in v["tensors"].values():
                tt.pop("raw", None)
        json.dump(expected, f, ensure_ascii=False)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, x)) for x in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
