"""RealtimeCore's handlers of the typed commands (control.commands) that set the robot's
state rather than choose a controller: enable, stop, reset, the command timeout, the speed
ratio, suppressions, the head, homing and the zero-G inputs; and the sim-control commands
(/intera_rt/sim/*: E-stop button, error, external wrench, pose reset, obstacles; the world's
models, body wrenches, the gripper's fingers and pausing, for the Gazebo world API), which
answer (success, message) and act only through the boards' interface where their
`capabilities` allow it (a backend without an ability refuses, saying which).

Mixed into RealtimeCore, whose apply table names these handlers; a refused command is one
log line (RealtimeCore.log) or a (False, why) answer, never a change of state.
"""
import math

from intera_rt.boards.base import GripperCommand
from intera_rt.control import commands as cmds
from intera_rt.control.base import CommandRejected
from intera_rt.robot import ARM_JOINTS, SUPPRESS_TOPICS

# The commands that change the world's models (their new states go out at once).
WORLD_COMMANDS = (cmds.SimSpawnModel, cmds.SimDeleteModel, cmds.SimSetModelState)


class CommandInputs:
    """The handlers (they use RealtimeCore's state machine, arm, head, homing, boards and
    _reset_pose)."""

    # --- the robot's interface ------------------------------------------------------------
    def _set_enable(self, c):
        why = self.state.set_enable(c.on)
        if why:
            self.log('warn', 'enable', 'set_super_enable: ' + why)

    def _stop(self, _c):
        self.state.stop()

    def _reset(self, _c):
        st = self.state
        if not (st.stopped or st.error):
            # Nothing to clear; the arm keeps doing what it does (the SDK's reset() refuses
            # before publishing, and keeps publishing a few after a reset took effect: info).
            self.log('info', 'reset', 'set_super_reset ignored: the robot is neither stopped '
                     'nor in error, nothing to reset')
            return
        if self.boards.fault:
            why = self.boards.clear_fault()
            if why:
                self.log('warn', 'reset', 'set_super_reset: reset refused: the joint boards '
                         'still report a fault (%s): %s' % (self.boards.fault, why))
                return
        self._board_fault = ''
        why = self.state.reset()
        if why:
            self.log('warn', 'reset', 'set_super_reset: ' + why)

    def _set_tool(self, c):
        """The robot's model carries a new tool: the controllers' dynamics and the stages
        that keep their own (collision detection's observer) at once, and a simulated plant
        (hardware weighs what it carries)."""
        self.dynamics.set_tool(c.tool)
        for stage in self._stages:
            stage.set_tool(c.tool)
            stage.set_tool_shapes(c.shapes)
        what = 'a tool of %.3f kg' % c.tool.mass if c.tool is not None else 'no tool'
        try:
            self.boards.set_tool(c.tool)
        except NotImplementedError:
            self.log('info', 'tool', 'the dynamics carry %s (%s: not its plant)'
                     % (what, self.boards.describe()))
            return
        except (ValueError, KeyError) as exc:
            self.log('error', 'tool', 'the plant cannot carry the tool (%s); the dynamics do' % exc)
            return
        self.log('info', 'tool', 'the dynamics and the plant carry %s' % what)

    def _set_timeout(self, c):
        try:
            value = self.arm.set_timeout(c.seconds)
        except CommandRejected as exc:
            self.log('error', 'timeout', str(exc))
            return
        if value != c.seconds:
            self.log('warn', 'timeout-clamped', 'joint_command_timeout %r clamped to %.1f s'
                     % (c.seconds, value))

    def _set_speed_ratio(self, c):
        try:
            value = self.arm.set_speed_ratio(c.ratio)
        except CommandRejected as exc:
            self.log('error', 'speed', str(exc))
            return
        if value != c.ratio:
            self.log('warn', 'speed-clipped', 'set_speed_ratio %r clipped to %.1f (the ratio is a '
                     'fraction of the velocity limits, in [0, 1])' % (c.ratio, value))
        if value == 0.0:
            self.log('warn', 'speed-zero', 'set_speed_ratio is 0: POSITION_MODE moves will not '
                     'progress until a ratio > 0 is set')

    def _suppress(self, c):
        if c.what not in SUPPRESS_TOPICS.values():
            self.log('error', 'suppress', 'nothing called %r can be suppressed' % (c.what,))
            return
        self.suppressions.suppress(c.what, self.now)

    def _head_command(self, c):
        why = self.state.why_not_moving()
        if why:
            self.log('warn', 'head-ignored', 'command_head_pan ignored: %s' % why)
            return
        try:
            warnings = self.head.command(c.target, c.speed_ratio, c.pan_mode)
        except CommandRejected as exc:
            self.log('error', 'head', 'command_head_pan rejected: %s' % exc)
            return
        for w in warnings:
            self.log('warn', 'head-clipped', 'command_head_pan: %s' % w)

    def _homing_command(self, c):
        why = self.state.why_not_moving()
        if why:
            self.log('warn', 'homing-ignored', 'set_homing_mode ignored: %s' % why)
            return
        try:
            started = self.homing.command(c.names, c.commands, self.now)
        except CommandRejected as exc:
            self.log('error', 'homing-rejected:' + exc.kind, 'set_homing_mode rejected: %s' % exc)
            return
        if started:
            self.log('info', 'homing', 'homing %s' % ', '.join(started))

    def _cuff_input(self, c):
        if c.source not in ('cuff', 'navigator'):
            self.log('error', 'cuff', 'unknown zero-G input %r' % (c.source,))
            return
        self._cuff[c.source] = bool(c.pressed)
        self._cuff_held = any(self._cuff.values())

    # --- sim control ----------------------------------------------------------------------
    def _sim_estop(self, c):
        if c.pressed:
            self.state.press_estop()
            return True, 'E-stop button pressed'
        self.state.release_estop()
        return True, 'E-stop button released (the robot stays stopped until reset)'

    def _sim_error(self, c):
        self.state.set_error(c.on)
        return True, 'error %s' % ('set' if c.on else 'cleared')

    def _sim_wrench(self, c):
        values, duration = c.wrench, c.duration
        if len(values) != 6 or not all(math.isfinite(v) for v in values) \
                or not (math.isfinite(duration) and duration > 0):
            return False, ('wrench must be 6 finite values and duration finite and > 0 (got %r, '
                           'duration %r)' % (list(values), duration))
        why = self._why_no_wrench_on(c.link)
        if why:
            return False, why
        if c.start > self.now:
            self._pending_wrenches.append(c)        # started by the tick that reaches c.start
            return True, 'a wrench on %s from %.3f s of loop time' % (c.link, c.start)
        self.boards.apply_wrench(c.link, values, duration)
        return True, 'applying %s on %s for %.3f s' % (list(values), c.link, duration)

    def _why_no_wrench_on(self, link):
        """Why the boards cannot push (or stop pushing) `link` of the arm; '' when they can."""
        if 'wrench' not in self._capabilities:
            return '%s cannot apply external wrenches' % self.boards.describe()
        if not self.model.has_frame(link):
            return 'no link named %r in the robot model' % link
        return ''

    def _sim_clear_wrenches(self, c):
        why = self._why_no_wrench_on(c.link)
        if why:
            return False, why
        self._pending_wrenches = [w for w in self._pending_wrenches
                                  if not (isinstance(w, cmds.SimWrench) and w.link == c.link)]
        self.boards.clear_wrenches(c.link)
        return True, 'cleared the wrenches on %s' % c.link

    def _sim_positions(self, c):
        if 'teleport' not in self._capabilities:
            return False, '%s cannot be reset to a pose' % self.boards.describe()
        names = list(c.names) or list(ARM_JOINTS)
        if len(names) != len(c.positions):
            return False, '%d names but %d positions' % (len(names), len(c.positions))
        for name, value in zip(names, c.positions):
            if name not in self.model.limits or name not in self.boards.joint_names:
                return False, 'unknown joint %r' % name
            lim = self.model.limits[name]
            if not (math.isfinite(value) and lim.lower <= value <= lim.upper):
                return False, '%s = %r is outside its limits [%.4f, %.4f]' % (name, value, lim.lower, lim.upper)
        q = self.boards.read().position.copy()
        for name, value in zip(names, c.positions):
            q[self.boards.joint_names.index(name)] = value
        self._reset_pose(q)
        return True, 'joints set'

    def _sim_add_obstacle(self, c):
        try:
            self.boards.add_obstacle(c.name, c.shape, c.position, c.quaternion, c.size)
        except (ValueError, NotImplementedError) as exc:
            return False, str(exc)
        self._obstacles = len(self.boards.obstacles())
        return True, 'obstacle %r: %s of size %s at %s' % (c.name, c.shape, list(c.size), list(c.position))

    def _sim_remove_obstacle(self, c):
        try:
            self.boards.remove_obstacle(c.name)
        except (KeyError, NotImplementedError) as exc:
            return False, exc.args[0] if exc.args else str(exc)
        self._obstacles = len(self.boards.obstacles())
        return True, 'obstacle %r removed' % (c.name,)

    # --- the world (boards capability 'world'; ros.gazebo_world validates the requests) ------
    def _world_call(self, what, call):
        """(True, what) after `call()`, or (False, why) when the boards cannot or refuse."""
        if 'world' not in self._capabilities:
            return False, '%s has no world: it cannot %s' % (self.boards.describe(), what)
        try:
            call()
        except (ValueError, KeyError, NotImplementedError) as exc:
            return False, exc.args[0] if exc.args else str(exc)
        return True, what

    def _count_world(self):
        self._world_models = len({b.model for b in self.boards.body_states()})

    def _sim_spawn_model(self, c):
        result = self._world_call('spawned %s' % c.model.name,
                                  lambda: self.boards.spawn_model(c.model, c.pose))
        if result[0]:
            self._count_world()
        return result

    def _sim_delete_model(self, c):
        self._pending_wrenches = [w for w in self._pending_wrenches if getattr(w, 'model', None) != c.name]
        result = self._world_call('deleted %s' % c.name, lambda: self.boards.delete_model(c.name))
        if result[0]:
            self._count_world()
        return result

    def _sim_set_model_state(self, c):
        return self._world_call('set %s' % c.name,
                                lambda: self.boards.set_model_state(c.name, c.pose, tuple(c.twist)))

    def _sim_body_wrench(self, c):
        if c.start > self.now:
            if 'world' not in self._capabilities:
                return False, '%s has no world: it cannot apply a wrench' % self.boards.describe()
            self._pending_wrenches.append(c)        # started by the tick that reaches c.start
            return True, 'a wrench on %s::%s from %.3f s of loop time' % (c.model, c.body, c.start)
        return self._world_call('applying a wrench on %s::%s' % (c.model, c.body),
                                lambda: self.boards.apply_body_wrench(c.model, c.body, c.force, c.torque,
                                                                      c.point, c.duration))

    def _start_wrenches(self):
        """The pending body wrenches whose start time came (called by the tick)."""
        due = [c for c in self._pending_wrenches if c.start <= self.now]
        self._pending_wrenches = [c for c in self._pending_wrenches if c.start > self.now]
        for c in due:
            ok, why = self._sim_wrench(c) if isinstance(c, cmds.SimWrench) else self._sim_body_wrench(c)
            if not ok:
                self.log('warn', 'body-wrench', 'apply_body_wrench at %.3f s: %s' % (c.start, why))

    def _sim_clear_body_wrenches(self, c):
        self._pending_wrenches = [w for w in self._pending_wrenches
                                  if (getattr(w, 'model', None), getattr(w, 'body', None)) != (c.model, c.body)]
        return self._world_call('cleared the wrenches on %s::%s' % (c.model, c.body),
                                lambda: self.boards.clear_body_wrenches(c.model, c.body))

    def _sim_gripper(self, c):
        if self.boards.gripper_state() is None:
            return False, '%s has no gripper on its model' % self.boards.describe()
        return self._world_call('gripper to %.4f m' % c.separation, lambda: self.boards.set_gripper(
            GripperCommand(c.separation, c.speed, c.force)))

    def _sim_pause(self, c):
        if self._owns_clock:
            return False, '%s owns the clock: it cannot be paused here' % self.boards.describe()
        self.paused = bool(c.paused)
        return True, 'physics %s' % ('paused' if self.paused else 'running')

    def world_frame(self):
        """(body states, the plant's gripper state or None) while the world has models, else
        None (the WorldFrame the core sends). Without models the gripper device simulates
        its own fingers, as without a world."""
        if not self._world_models or 'world' not in self._capabilities:
            return None
        return self.boards.body_states(), self.boards.gripper_state()
