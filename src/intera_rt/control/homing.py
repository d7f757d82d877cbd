"""Joint homing: what /robot/homing_states reports and /robot/set_homing_mode asks for.

Each arm joint is HOMED, HOMING or NOT_HOMED (intera_core_msgs/HomingState's values). A
Sawyer's joints have absolute encoders: the arm normally boots homed; booted unhomed
(`scripts/sawyer --unhomed`) it refuses motion commands until every joint is homed.

A homing command (AUTO or MANUAL; NONE leaves a joint alone) starts homing each listed
joint that is NOT_HOMED; the joint is HOMING for HOMING_TIME of loop time, then HOMED.
There is no motion: the joint holds where it is while its encoder is read (on the robot,
with absolute encoders, homing is that quick). AUTO and MANUAL behave the same here. A
joint that is HOMING or HOMED is left as it is, so the client's 1 Hz republishing of the
same command does not restart it. Homing needs the arm enabled (brakes released); a
disable, stop or error while joints are HOMING returns them to NOT_HOMED. Pure: time is
passed in.
"""
from intera_rt.control.base import CommandRejected

HOMED, HOMING, NOT_HOMED = 0, 1, 2            # intera_core_msgs/HomingState
NONE, MANUAL, AUTO = 0, 1, 2                   # intera_core_msgs/HomingCommand
STATE_NAMES = {HOMED: 'HOMED', HOMING: 'HOMING', NOT_HOMED: 'NOT_HOMED'}
COMMAND_NAMES = {NONE: 'NONE', MANUAL: 'MANUAL', AUTO: 'AUTO'}
HOMING_TIME = 1.0                              # s a joint is HOMING


class JointHoming:
    """The homing state of `joints` (names, in order).

    Args:
        joints: joint names, in the order `states` reports them.
        homed: boot homed (True) or with every joint NOT_HOMED.
        homing_time: s a joint takes to home.
    """

    def __init__(self, joints, homed=True, homing_time=HOMING_TIME):
        self.joints = tuple(joints)
        self.homing_time = float(homing_time)
        self.states = [HOMED if homed else NOT_HOMED] * len(self.joints)
        self._done_at = [0.0] * len(self.joints)
        self._index = {name: i for i, name in enumerate(self.joints)}
        self.busy = False            # some joint is HOMING (update() has work)
        self.all_homed = bool(homed)

    def command(self, names, commands, now):
        """A set_homing_mode: start homing the listed NOT_HOMED joints. Returns the names
        of the joints it started. Raises CommandRejected (naming field and value) for
        unknown joints, unequal lengths or unknown commands, changing nothing."""
        if len(names) != len(commands):
            raise CommandRejected('%d names but %d commands' % (len(names), len(commands)), 'lengths')
        unknown = [n for n in names if n not in self._index]
        if unknown:
            raise CommandRejected('unknown joint(s) %s (homing_states lists %s)'
                                  % (', '.join(map(repr, unknown)), ', '.join(self.joints)), 'names')
        bad = [(n, c) for n, c in zip(names, commands) if c not in COMMAND_NAMES]
        if bad:
            raise CommandRejected('command %r for %s is not NONE (0), MANUAL (1) or AUTO (2)'
                                  % (bad[0][1], bad[0][0]), 'command')
        started = []
        for name, cmd in zip(names, commands):
            i = self._index[name]
            if cmd != NONE and self.states[i] == NOT_HOMED:
                self.states[i] = HOMING
                self._done_at[i] = now + self.homing_time
                started.append(name)
        if started:
            self.busy = True
        return started

    def update(self, now):
        """Joints whose homing time is over become HOMED. Returns the names that did."""
        done = []
        for i, state in enumerate(self.states):
            if state == HOMING and now >= self._done_at[i] - 1e-9:
                self.states[i] = HOMED
                done.append(self.joints[i])
        if done:
            self.busy = HOMING in self.states
            self.all_homed = all(s == HOMED for s in self.states)
        return done

    def interrupt(self):
        """The brakes came on: joints still HOMING are NOT_HOMED again. Returns their names."""
        stopped = [self.joints[i] for i, s in enumerate(self.states) if s == HOMING]
        for i, s in enumerate(self.states):
            if s == HOMING:
                self.states[i] = NOT_HOMED
        self.busy = False
        return stopped

    def why_not_homed(self):
        """Why the arm may not move for want of homing, or None when every joint is HOMED."""
        if self.all_homed:
            return None
        waiting = ['%s %s' % (n, STATE_NAMES[s]) for n, s in zip(self.joints, self.states) if s != HOMED]
        return ('the arm is not homed (%s): home it first (/robot/set_homing_mode, e.g. the SDK\'s '
                'home_joints.py)' % ', '.join(waiting))
