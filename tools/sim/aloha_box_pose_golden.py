"""aloha_box_pose_golden.py — gym-aloha's cube pose draws for a few seeds, from numpy itself.

gym-aloha (huggingface/gym-aloha, gym_aloha/utils.py, sample_box_pose) places the
TransferCube cube with np.random.RandomState(seed).uniform over x in [0, 0.2],
y in [0.4, 0.6], z = 0.05. tests/sim/test_sim_aloha.c checks vla.c's draws
against these values. Run with Debian's interpreter:

    /usr/bin/python3 tools/sim/aloha_box_pose_golden.py > tests/sim/data/aloha_box_pose.txt
"""
import numpy as np

print("# seed x y z  (numpy %s RandomState(seed).uniform, gym-aloha sample_box_pose)" % np.__version__)
for seed in [0, 1, 2, 7, 42, 1000, 100000, 123456789, 4294967295]:
    ranges = np.vstack([[0.0, 0.2], [0.4, 0.6], [0.05, 0.05]])
    x, y, z = np.random.RandomState(seed).uniform(ranges[:, 0], ranges[:, 1])
    print("%d %.17g %.17g %.17g" % (seed, x, y, z))
