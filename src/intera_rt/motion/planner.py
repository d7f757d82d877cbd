"""The motion controller's planning step, pure: goal trajectory → checked plan + analysis.

    planner = MotionPlanner(model, collision)
    request = planner.parse(goal.trajectory, joint_values)        # MotionError on bad input
    planned = planner.plan(request, q_now, now, check_collision=True)

Order of the checks (each raises MotionError before any motion): the message
(INVALID_TRAJECTORY_MESSAGE / ENDPOINT_DOES_NOT_EXIST / PLANNED_JOINT_ACCEL_LIMIT for a
joint acceleration above the limit), the path (CARTESIAN_INTERPOLATION_FAILED), its timing
(FAILED_TO_PARAMETERIZE, PLANNED_JOINT_ACCEL_LIMIT for a Cartesian path), then the
sub-sampled self-collision check (PLANNED_MOTION_COLLISION).
"""
import time
from dataclasses import dataclass, field
from typing import List

import numpy as np

from intera_rt.model.ik import IKSolver
from intera_rt.model.robot_model import ARM_JOINTS
from intera_rt.motion import analysis
from intera_rt.motion.cartesian_planner import CartesianPlanner
from intera_rt.motion.errors import PLANNED_MOTION_COLLISION, MotionError
from intera_rt.motion.joint_planner import JointPlanner, JointSegmentLimits
from intera_rt.motion.validation import CARTESIAN, JOINT, Validator


@dataclass
class PlannedMotion:
    request: object
    plan: object
    analysis: dict
    samples: tuple
    planning_time: float = 0.0
    warnings: List[str] = field(default_factory=list)


class MotionPlanner:
    def __init__(self, model, collision=None, ik_solver=None):
        self.model = model
        self.collision = collision
        self.validator = Validator(model)
        lim = model.limit_arrays(list(ARM_JOINTS))
        self.lower, self.upper = lim['lower'], lim['upper']
        self.vel_limit, self.accel_limit = lim['velocity'], lim['accel']
        self.joint = JointPlanner(self.lower, self.upper)
        if ik_solver is None:       # model/ik.py: tells an unreachable waypoint from a bad path
            ik_solver = IKSolver(model, collision, max_restarts=10)
        self.cartesian = CartesianPlanner(model, ik_solver)

    def parse(self, trajectory, joint_values=None):
        return self.validator.parse(trajectory, joint_values)

    def endpoint(self, name):
        return self.cartesian.endpoint(name)

    def plan(self, request, q0, now=0.0, q_head=0.0, check_collision=True):
        """A checked plan from the current angles q0 (ARM_JOINTS order). `now` is on the
        clock of request.end_time."""
        t_start = time.perf_counter()
        q0 = np.clip(np.asarray(q0, dtype=float), self.lower, self.upper)
        warnings = list(request.warnings)
        if request.interpolation == JOINT:
            limits = [JointSegmentLimits(w.limits.speed_ratio * self.vel_limit, w.limits.joint_accel)
                      for w in request.waypoints]
            plan = self.joint.plan(q0, [w.q for w in request.waypoints], limits)
        elif request.interpolation == CARTESIAN:
            plan = self.cartesian.plan(q0, request)
        else:   # the validator never lets this through
            raise ValueError(request.interpolation)
        plan = self._timed(plan, request, now, warnings)
        samples = analysis.sample_plan(plan)
        check = check_collision and self.collision is not None
        hit = analysis.first_collision(plan, samples, self.collision, q_head) if check else None
        if hit is not None and request.interpolation == CARTESIAN:
            # Another posture along the same path may keep clear: plan again, checking each
            # stop-to-stop run as it is found (and trying the alternatives, see
            # CartesianPlanner._plan_run).
            plan = self._timed(self.cartesian.plan(q0, request, self.collision, q_head), request, now, [])
            samples = analysis.sample_plan(plan)
            hit = analysis.first_collision(plan, samples, self.collision, q_head)
        if request.interpolation == CARTESIAN:
            warnings.extend(self.cartesian.notes)
        if hit is not None:
            t, q, pairs = hit
            raise MotionError(PLANNED_MOTION_COLLISION,
                              'the planned path is in self-collision at t = %.2f s of %.2f s '
                              '(joints %s; links in contact: %s)'
                              % (t, plan.duration, np.round(q, 3).tolist(),
                                 ', '.join('%s–%s' % p for p in pairs) or '?'))
        result = analysis.analyze(plan, samples)
        return PlannedMotion(request, plan, result, samples, time.perf_counter() - t_start, warnings)

    @staticmethod
    def _timed(plan, request, now, warnings):
        """The plan stretched to end at request.end_time when that is later than it would."""
        if request.end_time > 0:
            wanted = request.end_time - now
            if wanted > plan.duration + 1e-6 and plan.duration > 0:
                base = plan
                plan = plan.scaled(wanted / plan.duration)
                for attr in ('reference_pieces', 'start_position'):
                    if hasattr(base, attr):
                        setattr(plan, attr, getattr(base, attr))
            elif wanted < plan.duration - 1e-6:
                warnings.append('end_time is %.3f s away but the fastest trajectory takes %.3f s: '
                                'running it as fast as possible' % (wanted, plan.duration))
        return plan
