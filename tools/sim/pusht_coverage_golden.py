#!/usr/bin/python3
"""pusht_coverage_golden.py — coverage goldens for tests/sim/test_sim_pusht.c.

Computes PushT coverage the way gym-pusht does (gym_pusht/envs/pusht.py
_get_coverage: shapely MultiPolygons of the two T shapes placed by the body
transform, intersection area over goal area) for seeded block poses, most of
them near the goal where coverage is partial. Run with Debian's interpreter
(needs python3-shapely):

    /usr/bin/python3 tools/sim/pusht_coverage_golden.py > tests/sim/data/pusht_coverage.txt
"""
import math

import numpy as np
import shapely
import shapely.geometry as sg

SHAPES = [
    [(-60, 30), (60, 30), (60, 0), (-60, 0)],
    [(-15, 30), (-15, 120), (15, 120), (15, 30)],
]
GOAL = (256.0, 256.0, math.pi / 4)


def t_geom(x, y, a):
    c, s = math.cos(a), math.sin(a)
    polys = []
    for verts in SHAPES:
        pts = [(c * vx - s * vy + x, s * vx + c * vy + y) for vx, vy in verts]
        polys.append(sg.Polygon(pts + [pts[0]]))
    return sg.MultiPolygon(polys)


def main():
    rs = np.random.RandomState(20240705)
    goal = t_geom(*GOAL)
    print("# x y angle coverage  (block body origin pose; shapely %s)" % shapely.__version__)
    for i in range(64):
        if i < 48:  # near the goal: partial overlaps
            x = GOAL[0] + rs.uniform(-40, 40)
            y = GOAL[1] + rs.uniform(-40, 40)
            a = GOAL[2] + rs.uniform(-0.8, 0.8)
        else:  # anywhere
            x, y, a = rs.uniform(50, 460), rs.uniform(50, 460), rs.uniform(-math.pi, math.pi)
        cov = goal.intersection(t_geom(x, y, a)).area / goal.area
        print("%.17g %.17g %.17g %.17g" % (x, y, a, cov))


if __name__ == "__main__":
    main()
