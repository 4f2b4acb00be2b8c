#!/usr/bin/python3
"""bench_pyav.py — the PyAV peer of `vla bench video`: LeRobot's pyav
seek-then-decode (v2.1 `decode_video_frames_torchvision` with the pyav
backend: seek to the keyframe before the first requested timestamp, decode
and convert every frame to RGB until the last one, then match each query to
the nearest decoded frame within tolerance_s) on the clip and timestamp list
that the C benchmark wrote. Run with Debian's /usr/bin/python3 (python3-av).

--mode reopen opens the file per call, as LeRobot's reader does;
--mode persistent keeps one container per camera open (a stronger baseline);
--mode persistent1 does the same with the decoder limited to one thread
(PyAV's default lets dav1d start several).
Prints one JSON line per camera count with frames/s per wall second and per
CPU second of this process; if PyAV is missing it prints {"unavailable": …}.
"""
import argparse
import json
import sys
import time

try:
    import av
    import numpy as np
except Exception as e:  # noqa: BLE001 - report any import failure as unavailable
    print(json.dumps({"unavailable": f"python3-av/numpy not importable: {e}"}))
    sys.exit(0)


def open_clip(path, one_thread):
    c = av.open(path)
    if one_thread:
        c.streams.video[0].thread_count = 1
    return c


def decode_frames(container, path, timestamps, tol):
    own = container is None
    if own:
        container = av.open(path)
    stream = container.streams.video[0]
    first_ts, last_ts = min(timestamps), max(timestamps)
    # keyframes_only seek, as LeRobot does
    container.seek(int(first_ts / stream.time_base), stream=stream, backward=True, any_frame=False)
    frames, times = [], []
    for frame in container.decode(stream):
        t = float(frame.pts * frame.time_base)
        frames.append(frame.to_ndarray(format="rgb24"))
        times.append(t)
        if t >= last_ts:
            break
    if own:
        container.close()
    q = np.asarray(timestamps)[:, None]
    dist = np.abs(q - np.asarray(times)[None, :])
    best = dist.argmin(axis=1)
    if not (dist.min(axis=1) <= tol).all():
        raise RuntimeError(f"{path}: no frame within {tol} s of {timestamps} (decoded {times[0]}..{times[-1]})")
    return np.stack([frames[i] for i in best])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clip", required=True)
    ap.add_argument("--timestamps", required=True)
    ap.add_argument("--max-cameras", type=int, default=3)
    ap.add_argument("--mode", choices=["reopen", "persistent", "persistent1"], default="persistent")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--check", type=int, default=20)
    a = ap.parse_args()
    samples = [[float(x) for x in line.split()] for line in open(a.timestamps) if line.strip()]

    # Untimed fingerprint of the first samples, camera 0 (compared with vla.c's).
    c = av.open(a.clip)
    check = 0
    for ts in samples[: a.check]:
        for t in ts:  # one frame at a time, like the C side's fingerprint
            check += int(decode_frames(c, a.clip, [t], a.tolerance).sum(dtype=np.uint64))
    c.close()
    print(json.dumps({"check_sum": check}), flush=True)

    for cams in range(1, a.max_cameras + 1):
        if a.mode == "reopen":
            conts = [None] * cams
        else:
            conts = [open_clip(a.clip, a.mode == "persistent1") for _ in range(cams)]
        w0, c0 = time.perf_counter(), time.process_time()
        n = 0
        for ts in samples:
            for cam in range(cams):
                n += len(decode_frames(conts[cam], a.clip, ts, a.tolerance))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        for x in conts:
            if x is not None:
                x.close()
        print(json.dumps({"cameras": cams, "mode": a.mode, "frames": n, "frames_per_s": n / wall,
                          "frames_per_cpu_s": n / cpu, "pyav": av.__version__}), flush=True)


if __name__ == "__main__":
    main()
