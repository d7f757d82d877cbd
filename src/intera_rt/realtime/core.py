"""The realtime core: joint boards, robot state machine and the controller pipeline, ticked
1 ms at a time. A pure object: no ROS, no clock reads; typed commands (control.commands) are
applied between ticks through an explicit table (`apply`), outputs are a state vector
(`state_vector()`, laid out and read by realtime.state) and log entries (`take_logs()`).

One tick:  boards read → monitors → the active controller → additive torques → boards write
(control.base describes the stages; control.registry lists them). The core picks the active
controller — the one a joint command's mode names, hold after a timeout or a collision,
zero-G while the cuff is grasped — by mode or role (control.base.ROLES), never by name.

The boards (intera_rt.boards) are driven through their interface only: lifecycle at boot
and close(), read / write each tick, advance(period) when the core owns the clock
(lockstep) or their time followed when they own it; a fault they report puts the robot in
error (reset asks them to clear it); sim-only abilities are used where `capabilities` lists
them (realtime.inputs). It runs in a process of its own (realtime.process).
"""
import math

import numpy as np

from intera_rt import native
from intera_rt.boards import make_boards
from intera_rt.control import commands as cmds
from intera_rt.control.arm import Arm
from intera_rt.control.base import ArmState, CommandRejected, PluginContext, Stage, Suppressions
from intera_rt.control.head import HeadController
from intera_rt.control.homing import JointHoming
from intera_rt.control.joint_command import MODE_NAMES
from intera_rt.control.registry import ADDITIVES, CONTROLLERS, MONITORS
from intera_rt.control.state_machine import RobotStateMachine
from intera_rt.native import kernels
from intera_rt.numeric import clip
from intera_rt.realtime.inputs import CommandInputs
from intera_rt.realtime.state import INDEX as STATE_INDEX
from intera_rt.realtime.state import (CONTROLLER_NAMES, N_BOARD, SCALAR_INDEX, STATE_SIZE,
                                     group_writer)
from intera_rt.robot import ARM_JOINTS, BOARD_JOINTS, LOOP_PERIOD, SUPPRESS_TOPICS

PERIOD = LOOP_PERIOD                  # s, one tick
SUPPRESS_WHATS = tuple(SUPPRESS_TOPICS.values())   # (state_vector's order, CORE_SCALARS')
MAX_TICK_PERIOD = 10 * PERIOD         # s: the most a tick on boards that own the clock counts
# s: under a simulator's clock (Gazebo), a joint command stamped at most this far ahead of
# the loop waits for the tick at its stamp (a client hears the simulator's /clock before the
# loop has caught up with its states); one stamped further ahead (a client's clock that is
# simply wrong) is applied at once
MAX_COMMAND_LEAD = 0.05


class RealtimeCore(CommandInputs):
    def __init__(self, model, backend='embedded', q_arm=None, q_head=0.0, enabled=True,
                 options=None, backend_options=None, homed=True):
        """options: stage name → {key: value} (realtime_loop's ROS parameters);
        backend_options: the boards backend's options (boards.registry). q_arm, q_head: the
        pose to boot in where the boards can be teleported; elsewhere the arm boots where it
        is. homed: False boots every arm joint NOT_HOMED (control.homing)."""
        self.model = model
        self.boards = make_boards(backend, model, backend_options)
        if tuple(self.boards.joint_names) != BOARD_JOINTS:
            raise ValueError('backend %r orders its joints %s' % (backend, self.boards.joint_names))
        self._capabilities = self.boards.capabilities
        self._owns_clock = self.boards.owns_clock
        # Joint commands from the loop's near future, waiting for their tick (sim_clock only)
        self._command_lead = MAX_COMMAND_LEAD if self.boards.sim_clock else 0.0
        self._ahead = []
        self.boards.configure()
        self.boards.activate()
        # The controllers, the head's and the monitors (the momentum observer) see the plant
        # as it is: its drives' armature, which need not be the robot's.
        model = self.boards.plant_model(model)
        self.state = RobotStateMachine(enabled=enabled)
        self.homing = JointHoming(ARM_JOINTS, homed=homed)
        self.arm = Arm(model, latency=self.boards.plant_latency)
        self.dynamics = self.arm.dynamics
        self._effort_limit = self.arm.effort_limit
        self._neg_effort_limit = -self._effort_limit
        self.suppressions = Suppressions()
        context = PluginContext(model, self.arm, options)
        self.controllers = {c.name: c(context) for c in CONTROLLERS}
        self.monitors = [m(context) for m in MONITORS]
        self.additives = [a(context) for a in ADDITIVES]
        self._stages = self.monitors + self.additives + list(self.controllers.values())
        self._scalers = [s for s in self._stages if type(s).speed_scale is not Stage.speed_scale]
        self._state = np.zeros(STATE_SIZE)             # (state_vector's, copied out)
        self._state_writers = [(s, group_writer(self._state, s.name)) for s in self._stages
                               if s.state_fields]
        self._by_mode = {c.joint_command_mode: c for c in self.controllers.values()
                         if c.joint_command_mode is not None}
        by_role = {c.role: c for c in self.controllers.values() if c.role}
        self.hold = by_role['hold']
        self.zero_g = by_role.get('zero_g')
        self.interaction = by_role.get('interaction')
        self.active = self.hold
        self.head = HeadController(model)
        self.now = 0.0                  # s of loop time since boot (sim time under lockstep)
        self._pending_wrenches = []     # SimWrench / SimBodyWrench with a start time to come
        self.tick_count = 0
        self.timeouts = 0
        self._last_command = -math.inf
        self._out = None                # the active controller's latest Output (None: brakes on)
        self._interaction = None        # the interaction torques added in the latest tick
        self._applied = None            # the torques written to the boards in the latest tick
        self._halt_until = -math.inf    # a collision stop holds the arm until then
        self._halt_kind = ''
        self._halt_collision = False
        self._obstacles = 0             # sim obstacles placed
        self._world_models = 0          # models spawned in the world
        self.paused = False             # SimPause: the process does not tick
        self._in_contact = False        # sim truth: the arm touches an obstacle
        self._contact_at = math.nan     # loop time the latest contact began
        self._cuff = {}                 # input source → pressed (CuffInput)
        self._cuff_held = False         # any of them
        self._resume = None             # the controller zero-G hands back to
        self._board_fault = ''          # the boards' fault that put the robot in error
        self._logs = []
        self._apply = {
            cmds.JointCommand: self._joint_command, cmds.SetEnable: self._set_enable,
            cmds.Stop: self._stop, cmds.Reset: self._reset, cmds.SetTimeout: self._set_timeout,
            cmds.SetSpeedRatio: self._set_speed_ratio, cmds.Suppress: self._suppress,
            cmds.HeadCommand: self._head_command, cmds.CuffInput: self._cuff_input,
            cmds.HomingCommand: self._homing_command,
            cmds.InteractionCommand: self._interaction_command, cmds.SetTool: self._set_tool,
            cmds.SimEstop: self._sim_estop, cmds.SimError: self._sim_error,
            cmds.SimWrench: self._sim_wrench, cmds.SimClearWrenches: self._sim_clear_wrenches,
            cmds.SimJointPositions: self._sim_positions,
            cmds.SimAddObstacle: self._sim_add_obstacle,
            cmds.SimRemoveObstacle: self._sim_remove_obstacle,
            cmds.SimSpawnModel: self._sim_spawn_model, cmds.SimDeleteModel: self._sim_delete_model,
            cmds.SimSetModelState: self._sim_set_model_state,
            cmds.SimBodyWrench: self._sim_body_wrench,
            cmds.SimClearBodyWrenches: self._sim_clear_body_wrenches,
            cmds.SimGripper: self._sim_gripper, cmds.SimPause: self._sim_pause,
        }
        for stage in self._stages:
            for kind in stage.COMMANDS:
                self._apply[kind] = lambda c, stage=stage: stage.take(c, self.now, self.suppressions)
        for why in (native.why_not, self.boards.native_note):
            if why:
                self.log('warn', 'native', why)
        reading = self.boards.read()
        # Loop time starts at boot; boards that own the clock may count from anywhere.
        # A simulator's clock (sim_clock) is ROS time: loop time is that time.
        self._t0 = reading.time if self._owns_clock and math.isfinite(reading.time) \
            and not self.boards.sim_clock else 0.0
        if 'teleport' in self._capabilities:
            q = reading.position.copy()
            q[:7] = q_arm if q_arm is not None else q[:7]
            q[7] = q_head
            self._reset_pose(q)
        else:
            # Hardware boots where the arm is.
            self._restart(self._arm_state(reading))
            self.log('info', 'boot', 'booting where the arm is (%s cannot be teleported): %s'
                     % (self.boards.describe(), np.round(reading.position, 3).tolist()))

    def close(self):
        """Brakes on and the boards shut down (their lifecycle's end)."""
        self.boards.shutdown()

    # --- logging: (level, throttle key, text); the adapter throttles and logs ------------
    def log(self, level, key, text):
        """Queue a log line: level 'info', 'warn' or 'error'; the adapter logs at most one
        line per `key` every few seconds."""
        self._logs.append((level, key, text))

    def command_gap(self):
        """While the active controller follows a stream of joint commands (it times out
        without one): (loop s since the last command, the command timeout, that command's
        loop time). None otherwise, and while a stamped command waits to take effect."""
        if self._ahead or not (self.active.command_timeout and self.state.motion_allowed):
            return None
        return self.now - self._last_command, self.arm.timeout, self._last_command

    def take_logs(self):
        """The lines logged since the last call, oldest first."""
        logs, self._logs = self._logs, []
        return logs

    # --- inputs (applied between ticks) ---------------------------------------------------
    def apply(self, command):
        """Apply one typed command (control.commands). Sim-control commands return
        (success, message); the others None. An unknown type is refused."""
        handler = self._apply.get(type(command))
        if handler is None:
            raise TypeError('the realtime core takes no %s' % type(command).__name__)
        return handler(command)

    def _why_not_commandable(self):
        why = self.state.why_not_moving() or self.homing.why_not_homed()
        if why:
            return why
        if self.active is self.zero_g:
            return 'zero-G is active (%s held)' % ' and '.join(sorted(k for k, v in self._cuff.items() if v))
        if self.now < self._halt_until:
            return '%s (%s): the arm holds for %.2f s more' % (
                'a collision was detected' if self._halt_collision else 'the arm was braked',
                self._halt_kind, self._halt_until - self.now)
        return None

    def _joint_command(self, c):
        if self._command_lead:
            if c.stamp is not None and 0.0 < c.stamp - self.now <= self._command_lead:
                self._ahead.append(c)
                return
            self._ahead.clear()         # (the newest command supersedes those waiting)
        self._take_joint_command(c)

    def _take_joint_command(self, c):
        why = self._why_not_commandable()
        if why:
            self.log('warn', 'cmd-ignored', 'joint_command ignored: %s' % why)
            return
        try:
            controller = self._by_mode.get(c.mode)
            if controller is None:
                raise CommandRejected('unknown mode %r (%s)' % (c.mode, MODE_NAMES), 'mode')
            state = self._arm_state()
            parsed, warnings = controller.validate(c, state)
        except CommandRejected as exc:
            # One throttled line per kind of problem: a stream of differing bad values
            # must not flood the log.
            self.log('error', 'cmd-rejected:' + exc.kind, 'joint_command rejected: %s' % exc)
            return
        if c.mode in self.active.reference_modes:
            # The active controller follows this stream as its reference (a motion under
            # interaction control) instead of handing the arm over.
            self.active.reference(parsed, state)
        else:
            if controller is not self.active:
                self._switch(controller, state, self._out)
            controller.command(parsed, state)
        self._last_command = self.now
        for w in warnings:
            self.log('warn', 'cmd-saturated', 'joint_command: %s' % w)

    def _interaction_command(self, c):
        """interaction_control_command: active → the interaction controller with these
        parameters (continuing from where the arm is); inactive → position hold where the
        arm is, if interaction control was in use (else nothing to end)."""
        controller = self.interaction
        if not c.interaction_control_active:
            if self.active is controller:
                self._switch(self.hold, self._arm_state(), None)
                self.log('info', 'interaction-off', 'interaction control ended: position hold')
            elif self._resume is controller:
                self._resume = self.hold            # zero-G will hand back to position hold
            return
        why = self._why_not_commandable()
        if why:
            self.log('warn', 'interaction-ignored', 'interaction_control_command ignored: %s' % why)
            return
        state = self._arm_state()
        try:
            parsed, notes = controller.validate(c, state)
        except CommandRejected as exc:
            self.log('error', 'interaction-rejected:' + exc.kind,
                     'interaction_control_command rejected: %s' % exc)
            return
        fresh = parsed is not controller.params
        switching = controller is not self.active
        if switching:
            self._switch(controller, state, self._out)
        controller.command(parsed, state)
        if notes:
            self.log('warn', 'interaction-params', 'interaction_control_command: %s' % '; '.join(notes))
        if fresh or switching:
            self.log('info', 'interaction-applied', controller.describe())

    # --- the pipeline's bookkeeping --------------------------------------------------------
    def _arm_state(self, reading=None, period=PERIOD):
        r = self.boards.read(self.now, PERIOD) if reading is None else reading
        q, qd, eff = r.position, r.velocity, r.effort
        return ArmState(now=self.now, period=period, q=q[:7], qd=qd[:7], effort=eff[:7],
                        q_head=float(q[7]), qd_head=float(qd[7]), dynamics=self.dynamics,
                        suppressions=self.suppressions)

    def _switch(self, controller, state, previous):
        """Make `controller` the active one, continuing from `previous` (an Output; None: at
        rest at the measured pose)."""
        controller.start(state, previous)
        self.active = controller

    def _reset_pose(self, q):
        """The arm is somewhere it did not move to (boot, teleport): every stage starts over
        from there, at rest."""
        self.boards.reset_pose(q)
        self._restart(self._arm_state())

    def _restart(self, state):
        for stage in self._stages:
            stage.reset(state)
        self._resume = None
        self._halt_until = -math.inf
        self._switch(self.hold, state, None)
        self.head.reset(state.q_head)

    def _supervise_zero_g(self, state):
        """Zero-G while the cuff is grasped (or the navigator's circle held), unless
        suppress_cuff_interaction keeps arriving; when let go, back to the controller in use
        before, at rest where the arm was let go. (The tick calls it only then.)"""
        zero_g = self.zero_g
        # (not while a monitor holds the arm: a brake or a collision stop comes first)
        wanted = self._cuff_held and not state.suppressed('cuff_interaction') \
            and state.now >= self._halt_until
        if wanted and self.active is not zero_g:
            self._resume = self.active
            self._switch(zero_g, state, None)
            self.log('info', 'zero-g', 'zero-G: %s held, the arm moves freely'
                     % ' and '.join(sorted(k for k, v in self._cuff.items() if v)))
        elif not wanted and self.active is zero_g:
            resume, self._resume = self._resume or self.hold, None
            self._switch(resume, state, None)
            self._last_command = self.now        # its command timeout starts over
            self.log('info', 'zero-g', 'zero-G ended: back to %s, holding where the arm was let go'
                     % resume.name)

    def _on_halt(self, halt, state):
        """A monitor stops the arm: hold it at rest where it is, refusing motion commands for
        halt.hold s; a compliant halt keeps re-seating the hold where the arm is pushed."""
        fresh = state.now >= self._halt_until
        self._halt_until = max(self._halt_until, state.now + halt.hold)
        if fresh:
            self._halt_kind = halt.kind
            self._halt_collision = halt.collision
            self.log('warn', 'halt:' + halt.kind, halt.message)
        if fresh or halt.compliant or self.active is not self.hold:
            self._switch(self.hold, state, None)

    # --- the tick ----------------------------------------------------------------------
    def _on_fault(self, fault):
        """The boards report a fault: the robot goes to error (brakes on) and says why."""
        if fault != self._board_fault or not self.state.error:
            self._board_fault = fault
            self.state.set_error(True)
            self.log('error', 'boards-fault', 'joint boards fault: %s; the robot is in error '
                     '(set_super_reset clears it once the boards do)' % fault)

    def tick(self):
        boards = self.boards
        reading = boards.read(self.now, PERIOD)
        period = PERIOD
        if self._owns_clock:
            # The plant's time since the last tick: a simulator not in lockstep with the loop
            # may have stepped more than once since (the references advance with it).
            now = reading.time - self._t0
            if now > self.now:
                period = min(now - self.now, MAX_TICK_PERIOD)
            self.now = now
        if self._pending_wrenches:
            self._start_wrenches()
        while self._ahead and self._ahead[0].stamp <= self.now:
            self._take_joint_command(self._ahead.pop(0))
        if reading.fault:
            self._on_fault(reading.fault)
        state = self._arm_state(reading, period)
        torque = None                   # (none commanded: zeros)
        if self.state.motion_allowed:
            if reading.brakes:
                self.boards.set_brakes(False)
                self._restart(state)
            if self._cuff_held or self.active is self.zero_g:
                self._supervise_zero_g(state)
            for monitor in self.monitors:
                halt = monitor.update(state, self.active)
                if halt is not None:
                    self._on_halt(halt, state)
            active = self.active
            if active.command_timeout and self.now - self._last_command > self.arm.timeout:
                self.timeouts += 1
                self._switch(self.hold, state, self._out)
                active = self.hold
            if active.speed_scaling and self._scalers and not state.suppressed('speed_scaling'):
                heading = active.heading()
                if heading is not None:
                    scale = 1.0
                    for stage in self._scalers:
                        scale = min(scale, stage.speed_scale(state, heading))
                    state.speed_scale = scale
            out = active.update(state)
            tau, interaction = out.torque, out.interaction
            for additive in self.additives:
                extra = additive.update(state, active, out)
                if extra is not None:
                    tau = tau + extra
                    if additive.interaction:
                        interaction = extra if interaction is None else interaction + extra
            head = self.head.tick(PERIOD, state.q_head, state.qd_head)
            both = None if kernels is None else kernels.board_torques(
                tau, self._neg_effort_limit, self._effort_limit, head)
            if both is None:
                torque = np.zeros(N_BOARD)
                clip(tau, self._neg_effort_limit, self._effort_limit, out=torque[:7])
                torque[7] = head
            else:
                torque = both
            self._out, self._interaction, self._applied = out, interaction, torque
        elif not reading.brakes:
            self.boards.set_brakes(True)
            self._out = self._interaction = None
            self._resume = None
            if self.homing.busy:
                self.log('warn', 'homing-interrupted', 'homing of %s interrupted (%s): not homed'
                         % (', '.join(self.homing.interrupt()), self.state.why_not_moving()))
        if self.homing.busy:
            done = self.homing.update(self.now)
            if done and self.homing.all_homed:
                self.log('info', 'homed', 'homing done: every joint of the arm is homed')
        boards.write(np.zeros(N_BOARD) if torque is None else torque, self.now, PERIOD)
        self.tick_count += 1
        if not self._owns_clock:
            boards.advance(PERIOD)
            self.now = self.tick_count * PERIOD
        if (self._obstacles or self._world_models) and 'contacts' in self._capabilities:
            # The simulator's truth, for benches and tests that time contact → stop.
            touching = bool(self.boards.contacts())
            if touching and not self._in_contact:
                self._contact_at = self.now
            self._in_contact = touching

    def state_vector(self):
        """Everything the robot's state topics need, as one float64 vector
        (realtime.state.StateView reads it), written through its index: the core's
        one-element fields in one assignment, then each stage's report."""
        v, i = self._state, STATE_INDEX
        v.fill(0.0)
        r = self.boards.read()
        st = self.state
        position = r.position
        v[i['q']], v[i['qd']], v[i['effort']] = position, r.velocity, r.effort
        out = self._out
        if out is not None:
            v[i['cmd_p']], v[i['cmd_v']], v[i['cmd_a']] = out.position, out.velocity, out.acceleration
            # what the joints were sent: within the effort limits, as the tick applies it
            v[i['cmd_effort']] = self._applied[:7] if out.effort is None \
                else clip(out.effort, self._neg_effort_limit, self._effort_limit)
            if self._interaction is not None:
                v[i['interaction_torque']] = self._interaction
        else:                               # brakes on: nothing commanded
            v[i['cmd_p']] = position[:7]
        v[i['homing']] = self.homing.states
        now = self.now
        halted = out is not None and now < self._halt_until
        contacts = 'contacts' in self._capabilities
        suppressed = self.suppressions.active
        # (CORE_SCALARS' order)
        v[SCALAR_INDEX] = (
            now, self.tick_count, out is not None, st.enabled, st.stopped, st.error,
            st.low_voltage, self.homing.all_homed, st.estop_button, st.estop_source,
            self.head.turning(position[7]), self.head.pan_mode,
            CONTROLLER_NAMES.index(self.active.name), any(self._cuff.values()),
            halted and self._halt_collision, max(0.0, self._halt_until - now) if halted else 0.0,
            self.timeouts, len(self.boards.contacts()) if contacts else 0,
            self._contact_at if contacts else 0.0,
            *[suppressed(what, now) for what in SUPPRESS_WHATS])
        for stage, put in self._state_writers:
            # (a field the stage does not declare raises AttributeError)
            stage.report(put)
        return v.copy()
