#!/usr/bin/env python3
"""Prints the input of gpuspans.rules.test.yml's daily-variation case: a
lane's recorded p99 every 5 minutes for three days from a new series,
200us with a daily cycle of +-20% (peak at 06:00) and +-5% of noise (a fixed
pseudo-random sequence, so the test is the same every run).

    python3 daily_series.py     # paste its line into the test's values
"""
import math
import random

rng = random.Random(20261203)
values = []
for i in range(3 * 24 * 12):  # 5-minute points
    day = math.sin(2 * math.pi * i / (24 * 12))
    noise = rng.uniform(-0.05, 0.05)
    values.append(f"{200e-6 * (1 + 0.2 * day) * (1 + noise):.4g}")
print(" ".join(values))
