"""Realtime plugins benchmark (section plugins), in process: the realtime core ticked by hand,
every stage on, sim time; no ROS, deterministic.

    scripts/env python -m intera_rt.bench.plugins [--quick]

costs       each stage's update per tick (mean, p50, p99; a speed scaler's speed_scale
            too) and the whole tick, in situations that make each plugin work: holding, a
            fast position move, collision avoidance pushing links apart, fast velocity folds
            of the elbow into the shoulder with --velocity-scaling (high-speed scaling, the
            safety status), the hand pressed on a table, zero-G guided by a push,
            interaction control pushed around.
latency     collision detection: JOINT motions driven into boxes at several speed ratios
            and obstacle positions; latency = the first tick the plant reports the contact
            -> the end of the tick that wrote the stop's first torques (1 ms is the floor).
            Every trial counts: no stop within 0.5 s of contact is a miss, a stop before any
            contact a false stop.
normal_use  sim seconds of normal use with every plugin on (fast moves, the SDK's torque
            springs and velocity wobbler, fast quintics, gravity compensation suppressed,
            zero-G and interaction control pushed by a person): the collision detections
            raised and the joint-speed monitor's brakes (targets 0; the free fall while
            gravity is suppressed is counted apart, as fall_braked: there a brake is right).
"""
import json
import math
import sys
import time

import numpy as np

from intera_rt import native
from intera_rt.control import commands as cmds
from intera_rt.model import RobotModel
from intera_rt.model.collision import CollisionModel
from intera_rt.realtime.core import RealtimeCore
from intera_rt.realtime.process import PUBLISH_EVERY
from intera_rt.robot import ARM_JOINTS, NEUTRAL

JOINTS = tuple(ARM_JOINTS)
NEUTRAL = np.array(NEUTRAL)
TARGETS = {'latency_p99_ms': 10.0, 'false_detections': 0, 'speed_brakes': 0,
           'tick_over_plant': 2.0}     # the whole tick over the plant's step, worst situation
MISS_AFTER = 0.5             # s after the contact without a stop: a miss


class PluginBench:
    """A realtime core with every stage, whose halts are timed."""

    def __init__(self, model, q=NEUTRAL, options=None):
        self.core = RealtimeCore(model, q_arm=list(q), options=options)
        self.model = model
        self.halts = []                               # loop times of each new halt
        self.kinds = []                               # and what it was
        self.core.tick()

    @property
    def now(self):
        return self.core.now

    @property
    def q(self):
        return self.core.boards.read().position[:7]

    @property
    def qd(self):
        return self.core.boards.read().velocity[:7]

    def command(self, mode, **arrays):
        arrays = {k: tuple(v) for k, v in arrays.items()}
        self.core.apply(cmds.JointCommand(mode=mode, names=JOINTS, **arrays))

    def tick(self):
        halted = self.core.now < self.core._halt_until
        self.core.tick()
        if not halted and self.core.now - 0.001 < self.core._halt_until:
            # the end of the tick whose torques are the stop's first
            self.halts.append(self.core.now)
            self.kinds.append(self.core._halt_kind)

    def run(self, seconds, each=None, every=0.01):
        n = max(1, int(round(every / 0.001)))
        for i in range(int(round(seconds / 0.001))):
            if each is not None and i % n == 0:
                each(self)
            self.tick()


def _stats(values_us):
    v = np.asarray(values_us, float)
    if not len(v):
        return {'mean': None, 'p50': None, 'p99': None, 'n': 0}
    return {'mean': round(float(v.mean()), 1), 'p50': round(float(np.percentile(v, 50)), 1),
            'p99': round(float(np.percentile(v, 99)), 1), 'n': int(len(v))}


# --- costs ---------------------------------------------------------------------------------
def _timed(bench):
    """Wrap each stage's update and the plant's step with a timer; returns {name: [µs]}."""
    core, times = bench.core, {}

    def wrap(obj, attr, label):
        fn = getattr(obj, attr)
        acc = times.setdefault(label, [])
        clock = time.perf_counter

        def timed(*args):
            t0 = clock()
            result = fn(*args)
            acc.append(1e6 * (clock() - t0))
            return result
        setattr(obj, attr, timed)
    for stage in core.monitors + core.additives:
        wrap(stage, 'update', stage.name)
    for stage in core._scalers:
        wrap(stage, 'speed_scale', stage.name + '.speed_scale')
    for controller in core.controllers.values():
        wrap(controller, 'update', 'controller:' + controller.name)
    wrap(core.boards, 'advance', 'plant')
    return times


def _situation(model, name):
    """(bench, each): a core in situation `name`, settled into it, and what to do every
    10 ms to keep it there (or None)."""
    # fold: --velocity-scaling on as well, so both speed scalings and the status work
    bench = PluginBench(model, options={'collision_avoidance': {'velocity_scaling': True}}
                        if name == 'fold' else None)
    core = bench.core
    table_z = model.arm_dynamics.tip('right_hand', NEUTRAL)[0]
    if name == 'avoidance':
        target = NEUTRAL.copy()
        target[3] = 2.66                          # the elbow folds the hand into the shoulder
        each = lambda b: b.command(1, position=target)                     # noqa: E731
    elif name == 'fold':
        # VELOCITY_MODE folds the elbow into the shoulder at 1.5 rad/s and back, the high-
        # speed shapes and the armnav zone closing in on each fold
        core.apply(cmds.SimJointPositions(names=JOINTS, positions=tuple(NEUTRAL)))

        def each(b):
            v = np.zeros(7)
            v[3] = 1.5 if b.now % 0.8 < 0.4 else -1.5
            b.command(2, velocity=v)
    elif name == 'contact':
        core.apply(cmds.SimAddObstacle(name='table', shape='box',
                                       position=(table_z[0], table_z[1], table_z[2] - 0.15),
                                       quaternion=(0, 0, 0, 1), size=(0.4, 0.4, 0.2)))
        core.apply(cmds.SetSpeedRatio(ratio=0.02))
        target = NEUTRAL.copy()
        target[1] += 0.05                         # pressing on it, slowly
        each = lambda b: b.command(1, position=target)                     # noqa: E731
    elif name == 'move':
        core.apply(cmds.SetSpeedRatio(ratio=1.0))
        targets = [np.array([1.0, -0.6, 1.2, 1.5, 1.0, -1.0, 2.0]), NEUTRAL]
        each = lambda b: b.command(1, position=targets[int(b.now / 1.5) % 2])  # noqa: E731
    elif name == 'zero_g':
        core.apply(cmds.CuffInput(source='cuff', pressed=True))

        def each(b):
            b.core.apply(cmds.SimWrench(link='right_hand', wrench=(0.0, 4.0 * math.sin(2 * b.now), 0.0, 0, 0, 0),
                                        duration=0.01))
    elif name == 'interaction':
        core.apply(_interaction_command())

        def each(b):
            b.core.apply(cmds.SimWrench(link='right_hand', wrench=(10.0 * math.sin(2 * b.now), 0.0, 0.0, 0, 0, 0),
                                        duration=0.01))
    else:
        each = None
    bench.run(0.5, each)                          # settle into the situation
    return bench, each


def _scenario(model, name, ticks):
    bench, each = _situation(model, name)
    core = bench.core
    times = _timed(bench)
    tick, vector = [], []
    clock = time.perf_counter
    for i in range(ticks):
        if each is not None and i % 10 == 0:
            each(bench)
        t0 = clock()
        bench.tick()
        tick.append(1e6 * (clock() - t0))
        if i % PUBLISH_EVERY == 0:
            # the state vector, built each state period as the loop's process does
            t0 = clock()
            core.state_vector()
            vector.append(1e6 * (clock() - t0))
    out = {label: _stats(v) for label, v in times.items() if v}
    out['tick'] = _stats(tick)
    out['state_vector'] = _stats(vector)
    # The tick's own bookkeeping: what neither the plant nor a stage's update takes.
    stages = sum(np.sum(v) for label, v in times.items() if label != 'plant')
    out['pipeline'] = {'mean': round(float((np.sum(tick) - stages - np.sum(times['plant'])) / ticks), 1)}
    # The tick as the loop runs it (its state vector each state period included) over the
    # plant's step alone: how much the software costs beyond the physics it drives.
    whole = out['tick']['mean'] + out['state_vector']['mean'] / PUBLISH_EVERY
    out['tick_over_plant'] = round(whole / out['plant']['mean'], 2)
    # ... and that cost itself: the ratio above also rises when the plant gets cheaper.
    out['beyond_plant_us'] = round(whole - out['plant']['mean'], 1)
    return out


# Pinocchio's calls (its dynamics, and hpp-fcl's queries through it) by name prefix: the
# libraries' own work, which a tick compiled around the same calls would still pay.
LIBRARY_CALLS = ('compute', 'update', 'rnea', 'crba', 'aba', 'forwardKinematics',
                 'framesForwardKinematics', 'getFrame', 'getJoint', 'nonLinearEffects', 'log3')


def _library_us(model, name, ticks):
    """µs per tick the core spends inside Pinocchio's calls beyond the plant's step (its
    state vector each state period included), in a second run of the situation (the same
    ticks: sim time, deterministic; the timers' own cost, measured on a no-op, taken off):
    what a tick compiled around the same calls would still pay."""
    import pinocchio as pin
    # (a core without the compiled dynamics: their Pinocchio calls are then the Python calls
    # timed here; the same calls, the same results)
    compiled, native.dynamics = native.dynamics, None
    try:
        bench, each = _situation(model, name)
    finally:
        native.dynamics = compiled
    boards, clock = bench.core.boards, time.perf_counter
    spent, plant = [0.0, 0], [False]

    def wrap(fn):
        def timed(*args):
            if plant[0]:
                return fn(*args)
            t0 = clock()
            result = fn(*args)
            spent[0] += clock() - t0
            spent[1] += 1
            return result
        return timed
    saved = {n: getattr(pin, n) for n in dir(pin)
             if n.startswith(LIBRARY_CALLS) and callable(getattr(pin, n))}
    advance = boards.advance

    def plant_step(*args):
        plant[0] = True
        try:
            return advance(*args)
        finally:
            plant[0] = False
    noop = wrap(lambda: None)
    for _ in range(20000):
        noop()
    per_call, spent[:] = spent[0] / spent[1], [0.0, 0]
    try:
        for n, fn in saved.items():
            setattr(pin, n, wrap(fn))
        boards.advance = plant_step
        for i in range(ticks):
            if each is not None and i % 10 == 0:
                each(bench)
            bench.tick()
            if i % PUBLISH_EVERY == 0:
                bench.core.state_vector()             # (as _scenario: a stage may report lazily)
    finally:
        for n, fn in saved.items():
            setattr(pin, n, fn)
    return 1e6 * max(0.0, spent[0] - spent[1] * per_call) / ticks


def costs(model, ticks):
    out = {}
    for name in ('hold', 'move', 'avoidance', 'fold', 'contact', 'zero_g', 'interaction'):
        stages = out[name] = _scenario(model, name, ticks)
        # The floor of a compiled tick making the same calls: the plant's step and those
        # calls, nothing of Python around them.
        stages['library_us'] = round(_library_us(model, name, ticks), 1)
        plant = stages['plant']['mean']
        stages['floor_over_plant'] = round((plant + stages['library_us']) / plant, 2)
    return out


def _interaction_command(mode=(1,) * 6, force=(0.0,) * 6):
    """set_interaction_options.py -k 500 500 500 10 10 10 -m 0 0 0 0 0 0 (its nullspace
    stiffness), with these modes and force command."""
    return cmds.InteractionCommand(interaction_control_active=True, interaction_control_mode=tuple(mode),
                                   K_impedance=(500.0,) * 3 + (10.0,) * 3, max_impedance=(False,) * 6,
                                   D_impedance=(), K_nullspace=(5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0),
                                   force_command=tuple(force))


# --- detection latency ------------------------------------------------------------------------
def _trials(model, quick):
    """(label, joint, target angle, obstacle (name, shape, centre, quat, size), ratio)."""
    hand = model.arm_dynamics.tip('right_hand', NEUTRAL)[0]
    rho, phi0 = math.hypot(hand[0], hand[1]), math.atan2(hand[1], hand[0])
    ratios = (0.2, 0.5, 1.0) if quick else (0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
    trials = []
    for ahead in ((0.25,) if quick else (0.2, 0.3, 0.45)):
        phi = phi0 + ahead
        centre = (rho * math.cos(phi) - 0.05 * math.sin(phi), rho * math.sin(phi) + 0.05 * math.cos(phi),
                  hand[2] - 0.05)
        wall = ('wall', 'box', centre, (0.0, 0.0, math.sin(phi / 2), math.cos(phi / 2)), (0.2, 0.1, 0.16))
        trials += [('j0 into a wall %.2f rad ahead' % ahead, 0, NEUTRAL[0] + ahead + 0.4, wall, r)
                   for r in ratios]
    for drop in ((0.08,) if quick else (0.06, 0.1, 0.15)):
        table = ('table', 'box', (hand[0] + 0.05, hand[1], hand[2] - drop - 0.1), (0, 0, 0, 1), (0.5, 0.5, 0.2))
        trials += [('j1 onto a table %.2f m below' % drop, 1, NEUTRAL[1] + 0.5, table, r) for r in ratios]
    return trials


def latency(model, quick):
    rows, misses, false_stops = [], 0, 0
    for label, joint, angle, obstacle, ratio in _trials(model, quick):
        bench = PluginBench(model)
        core = bench.core
        name, shape, centre, quat, size = obstacle
        ok, why = core.apply(cmds.SimAddObstacle(name=name, shape=shape, position=centre,
                                                 quaternion=quat, size=size))
        if not ok:
            raise RuntimeError('%s: %s' % (label, why))
        core.apply(cmds.SetSpeedRatio(ratio=ratio))
        bench.run(0.4)                                    # detection armed after boot
        target = NEUTRAL.copy()
        target[joint] = angle
        contact = None
        for i in range(6000):
            if i % 10 == 0 and not bench.halts:
                bench.command(1, position=target)
            bench.tick()
            if contact is None and core.boards.contacts():
                contact = core.now
            if bench.halts or (contact is not None and core.now - contact > MISS_AFTER):
                break
        row = {'trial': label, 'speed_ratio': ratio, 'contact_s': contact,
               'speed_at_contact': None}
        if contact is None:
            row['result'] = 'no contact'
        elif not bench.halts:
            row['result'] = 'miss'
            misses += 1
        elif bench.halts[0] < contact:
            row['result'] = 'stopped before contact'
            false_stops += 1
        else:
            row['result'] = 'stopped'
            row['latency_ms'] = round(1e3 * (bench.halts[0] - contact), 1)
            row['kind'] = core._halt_kind
        rows.append(row)
    lat = [r['latency_ms'] for r in rows if 'latency_ms' in r]
    out = {'trials': len(rows), 'stopped': len(lat), 'misses': misses,
           'stopped_before_contact': false_stops,
           'no_contact': sum(r['result'] == 'no contact' for r in rows),
           'latency_ms': {'p50': round(float(np.percentile(lat, 50)), 2) if lat else None,
                          'p99': round(float(np.percentile(lat, 99)), 2) if lat else None,
                          'max': float(max(lat)) if lat else None},
           'rows': rows}
    return out


# --- normal use -------------------------------------------------------------------------------
def _random_targets(model, n, seed):
    """Collision-free (tight model) random poses within the joint limits, avoidance clear."""
    rng = np.random.default_rng(seed)
    lim = model.limit_arrays(JOINTS)
    collision = CollisionModel(model.urdf_xml)
    from intera_rt.model.avoidance import AvoidanceModel, default_armnav_xml
    avoid = AvoidanceModel(default_armnav_xml())
    out = []
    while len(out) < n:
        q = rng.uniform(0.8 * lim['lower'], 0.8 * lim['upper'])
        if not collision.in_collision(q) and not avoid.pushing(q, 0.0) and \
                model.arm_dynamics.tip('right_hand', q)[0][2] > 0.05:
            out.append(q)
    return out


def normal_use(model, quick, seed=1):
    runs = {}

    def record(name, bench, seconds, fall=False):
        # fall: the arm falls freely (gravity suppressed): a brake is the joint-speed monitor
        # doing its job, counted apart (falls_braked), not as a brake in normal use.
        brakes = sum(k == 'joint_speed' for k in bench.kinds)
        runs[name] = {'sim_s': round(seconds, 2),
                      'detections': sum(k != 'joint_speed' for k in bench.kinds),
                      'speed_brakes': 0 if fall else brakes,
                      'kinds': list(bench.kinds)}
        if fall:
            runs[name]['fall_braked'] = brakes > 0

    # Fast position moves at speed ratio 1 between random collision-free poses.
    bench = PluginBench(model)
    bench.core.apply(cmds.SetSpeedRatio(ratio=1.0))
    targets = _random_targets(model, 3 if quick else 12, seed) + [NEUTRAL]
    for target in targets:
        bench.run(3.0, lambda b: b.command(1, position=target))
    record('position_moves_ratio_1', bench, 3.0 * len(targets))
    # The SDK's joint_torque_springs (its default stiffness, damping 0.1) after a push away.
    bench = PluginBench(model)
    k, d = np.array([10.0, 15.0, 5.0, 5.0, 3.0, 2.0, 1.5]), 0.1
    bench.core.apply(cmds.SetSpeedRatio(ratio=1.0))
    away = NEUTRAL + np.array([0.4, -0.3, 0.4, -0.4, 0.5, -0.5, 0.8])
    bench.run(2.0, lambda b: b.command(1, position=away))
    bench.core.apply(cmds.SetTimeout(seconds=0.02))
    springs = 3.0 if quick else 8.0
    bench.run(springs, lambda b: b.command(3, effort=-k * (b.q - NEUTRAL) - d * b.qd), 0.001)
    record('torque_springs', bench, 2.0 + springs)
    # The SDK's velocity wobbler: sinusoids at 500 Hz.
    bench = PluginBench(model)
    rng = np.random.default_rng(seed)
    amp, freq = rng.uniform(0.1, 0.2, 7), 1.0 / rng.uniform(0.5, 1.0, 7)
    wobble = 4.0 if quick else 15.0
    bench.run(wobble, lambda b: b.command(2, velocity=amp * np.sin(2 * math.pi * freq * b.now)), 0.002)
    record('velocity_wobbler', bench, wobble)
    # Fast quintics in TRAJECTORY_MODE (peak speeds just within the limits), at 100 Hz.
    bench = PluginBench(model)
    seconds = 0.0
    vmax = model.limit_arrays(JOINTS)['velocity']
    for target in targets[:3] if quick else targets:
        q0, t0 = bench.q.copy(), bench.now
        span = 1.05 * 1.875 * float(np.max(np.abs(target - q0) / vmax))    # quintic peak 1.875 × mean

        def stream(b, q0=q0, q1=target, t0=t0, span=span):
            s = min(max((b.now - t0) / span, 0.0), 1.0)
            p = q0 + (q1 - q0) * (10 * s**3 - 15 * s**4 + 6 * s**5)
            v = (q1 - q0) * (30 * s**2 - 60 * s**3 + 30 * s**4) / span
            a = (q1 - q0) * (60 * s - 180 * s**2 + 120 * s**3) / span**2
            b.command(4, position=p, velocity=v, acceleration=a)
        bench.run(span + 0.4, stream)
        seconds += span + 0.4
    record('trajectory_quintics', bench, seconds)
    # Gravity compensation suppressed for 0.3 s in torque mode, then held again.
    bench = PluginBench(model)
    bench.core.apply(cmds.SetTimeout(seconds=0.05))
    bench.run(0.3, lambda b: (b.core.apply(cmds.Suppress(what='gravity')),
                              b.command(3, effort=np.zeros(7))))
    hold = bench.q.copy()
    bench.run(1.5, lambda b: b.command(1, position=hold))
    record('gravity_suppressed', bench, 1.8, fall=True)
    # Zero-G: a person pushes the arm around by the hand, then lets go.
    bench = PluginBench(model)
    bench.core.apply(cmds.CuffInput(source='cuff', pressed=True))
    guide = 3.0 if quick else 8.0
    bench.run(guide, lambda b: b.core.apply(cmds.SimWrench(
        link='right_hand', duration=0.01,
        wrench=(10.0 * math.sin(1.3 * b.now), 10.0 * math.cos(0.9 * b.now), 3.0 * math.sin(2.1 * b.now),
                0.0, 0.0, 0.0))))
    bench.core.apply(cmds.CuffInput(source='cuff', pressed=False))
    bench.run(1.0)
    record('zero_g_guiding', bench, guide + 1.0)
    # Interaction control: a person pushes the hand around against the impedance, lets go.
    bench = PluginBench(model)
    bench.run(0.4)                                # past collision detection's settling
    bench.core.apply(_interaction_command())
    guide = 3.0 if quick else 8.0
    bench.run(guide, lambda b: b.core.apply(cmds.SimWrench(
        link='right_hand', duration=0.01,
        wrench=(15.0 * math.sin(1.3 * b.now), 15.0 * math.cos(0.9 * b.now) - 15.0,
                8.0 * math.sin(2.1 * b.now), 0.0, 0.0, 0.0))))
    bench.run(1.5)
    record('interaction_pushed', bench, guide + 1.9)
    # Force mode: 10 N down onto a table 15 mm below the hand, pressing.
    bench = PluginBench(model)
    hand = model.arm_dynamics.tip('right_hand', NEUTRAL)[0]
    bench.core.apply(cmds.SimAddObstacle(name='table', shape='box',
                                         position=(hand[0], hand[1], hand[2] - 0.15),
                                         quaternion=(0, 0, 0, 1), size=(0.4, 0.4, 0.2)))
    bench.run(0.4)
    bench.core.apply(_interaction_command((1, 1, 2, 1, 1, 1), (0.0, 0.0, -10.0, 0.0, 0.0, 0.0)))
    press = 2.0 if quick else 5.0
    bench.run(press)
    record('interaction_force_press', bench, press + 0.4)
    return {'sim_s': round(sum(r['sim_s'] for r in runs.values()), 1),
            'detections': sum(r['detections'] for r in runs.values()),
            'speed_brakes': sum(r['speed_brakes'] for r in runs.values()), 'runs': runs}


def run(quick=False, out_dir=None):
    model = RobotModel.from_file()
    t0 = time.monotonic()
    out = {'costs': costs(model, 2000 if quick else 10000)}
    worst = max(v['tick_over_plant'] for v in out['costs'].values())
    out['tick_over_plant'] = worst
    out['floor_over_plant'] = max(v['floor_over_plant'] for v in out['costs'].values())
    if out_dir is not None:
        out['plots'] = _plot_profile(out['costs'], out_dir)
    out['latency'] = latency(model, quick)
    out['normal_use'] = normal_use(model, quick)
    out['targets'] = TARGETS
    p99 = out['latency']['latency_ms']['p99']
    out['verdict'] = {
        'latency_p99_ms': p99 is not None and p99 <= TARGETS['latency_p99_ms']
        and out['latency']['misses'] == 0,
        'false_detections': out['normal_use']['detections'] == TARGETS['false_detections'],
        'speed_brakes': out['normal_use']['speed_brakes'] == TARGETS['speed_brakes'],
        'tick_over_plant': worst <= TARGETS['tick_over_plant']}
    out['wall_s'] = round(time.monotonic() - t0, 1)
    out['summary'] = _summary(out)
    return out


PROFILE_ORDER = ('plant', 'pipeline', 'state_vector')      # then the stages, as the tick runs them


def _profile_parts(stages):
    """[(label, mean µs per tick)] of one situation: the plant, the tick's bookkeeping, the
    state vector (per tick: built each PUBLISH_EVERY), then each stage's update — a part
    that runs on some ticks only (a speed scaler's speed_scale: while the controller heads
    somewhere) counted over every tick, so that the parts add up to the tick."""
    ticks = stages['tick']['n']
    parts = [('plant', stages['plant']['mean']), ('pipeline', stages['pipeline']['mean']),
             ('state_vector', stages['state_vector']['mean'] / PUBLISH_EVERY)]
    return parts + [(name.replace('controller:', ''), v['mean'] * v['n'] / ticks)
                    for name, v in stages.items()
                    if isinstance(v, dict) and name not in PROFILE_ORDER + ('tick',)]


def _plot_profile(costs_out, out_dir):
    """tick_profile.png: each situation's tick as stacked bars of its parts (µs); the
    plant's step alone, twice, marks the target."""
    import os
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return {'error': 'matplotlib: %s' % exc}
    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9.5, 4))
    labels, colours = {}, plt.get_cmap('tab20').colors
    for row, (scenario, stages) in enumerate(costs_out.items()):
        left = 0.0
        for label, mean in _profile_parts(stages):
            first = label not in labels
            colour = colours[labels.setdefault(label, len(labels)) % len(colours)]
            ax.barh(row, mean, left=left, color=colour, label=label if first else None)
            left += mean
        ax.plot([2 * stages['plant']['mean']] * 2, [row - 0.4, row + 0.4], 'k--', lw=1)
    ax.set_yticks(range(len(costs_out)))
    ax.set_yticklabels(list(costs_out))
    ax.invert_yaxis()
    ax.set_xlabel('µs per tick, mean (dashed: 2 × the plant\'s step, the target)')
    ax.set_title('realtime tick profile, every plugin on (in process, sim time)')
    ax.legend(fontsize=7, loc='center left', bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    path = os.path.join(out_dir, 'tick_profile.png')
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return {'tick_profile': path}


def _summary(out):
    lines = []
    for scenario, stages in out['costs'].items():
        parts = ['%s %.1f' % kv for kv in _profile_parts(stages)]
        lines.append('%-11s tick mean %.1f p99 %.1f µs = %.2f × the plant (%.1f µs beyond it; '
                     'in Pinocchio/hpp-fcl %.1f: a compiled floor of %.2f ×); %s' % (
                         scenario, stages['tick']['mean'], stages['tick']['p99'],
                         stages['tick_over_plant'], stages['beyond_plant_us'], stages['library_us'],
                         stages['floor_over_plant'], ', '.join(parts)))
    verdict = 'PASS' if out['verdict']['tick_over_plant'] else 'FAIL'
    lines.append('  the whole tick over the plant\'s step, worst situation: %.2f; target <= %.1f: '
                 '%s (the plant and the library calls alone: %.2f)'
                 % (out['tick_over_plant'], TARGETS['tick_over_plant'], verdict,
                    out['floor_over_plant']))
    lat = out['latency']
    lines.append('detection: %d trials, %d stopped, %d missed, %d stopped before contact; '
                 'contact → stop p50 %s, p99 %s, max %s ms' % (
                     lat['trials'], lat['stopped'], lat['misses'], lat['stopped_before_contact'],
                     lat['latency_ms']['p50'], lat['latency_ms']['p99'], lat['latency_ms']['max']))
    use = out['normal_use']
    lines.append('normal use: %.1f s of sim time, %d collision detections, %d joint-speed brakes (%s); '
                 'a free fall braked: %s' % (
                     use['sim_s'], use['detections'], use['speed_brakes'],
                     ', '.join('%s %s' % (k, v['kinds'] or 0) for k, v in use['runs'].items()),
                     use['runs']['gravity_suppressed']['fall_braked']))
    return lines


if __name__ == '__main__':
    print(json.dumps(run(quick='--quick' in sys.argv[1:]), indent=1))
