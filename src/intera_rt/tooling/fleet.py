"""`scripts/fleet N -- CMD ...`: N emulated Sawyers on this machine, CMD run against each.

Every robot is a `scripts/sawyer --sim-time` on a ROS master of its own (a free port, or
`--base-port P` + index), started and stopped by tooling.robot_process (the launcher the
tests and benches use), or with `--image NAME` the same in a container of that image
(scripts/image; podman, the host's network). Once a robot publishes /robot/state, CMD runs
against it with ROS_MASTER_URI, FLEET_INDEX (0..N-1), FLEET_SIZE and FLEET_LOG_DIR set. Each robot's outcome
(ok, CMD's exit code, boot failure, port in use, time-out) is reported on its own with its
logs; one robot's failure does not touch the others. Everything started is stopped at the
end, also on Ctrl-C or SIGTERM: each robot and each CMD runs in a process group of its own,
which is signalled as a whole, then killed.

Exit code: 0 when CMD succeeded on every robot, 1 when any robot failed, 2 on bad
arguments, 130 when interrupted.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from intera_rt.tooling.robot_process import (REPO, RobotProcess, _die_with_parent, descendants,
                                              free_port, proc_start_time)

BOOT_TIMEOUT = 120.0       # s: N robots boot at once on few cores
CMD_STOP_TIMEOUT = 5.0     # s: SIGTERM to a CMD's group until SIGKILL
POLL = 0.1                 # s


def port_in_use(port):
    """True when something on 127.0.0.1 already holds `port` (listening or bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(('127.0.0.1', port))
        except OSError:
            return True
    return False


class ContainerRobot(RobotProcess):
    """A RobotProcess whose scripts/sawyer runs in a container of `image` (`podman run` with
    the host's network; the image's entrypoint is scripts/sawyer, its master port set by
    SAWYER_MASTER_PORT). The container's processes are not descendants of `podman run`, so
    stop() asks podman to stop the container first."""

    def __init__(self, image, args, log_path, ros_log_dir):
        super().__init__(args, log_path, ros_log_dir)
        self.image = image
        self.name = None

    def start(self):
        self.name = 'intera_rt_fleet_%d_%d' % (os.getpid(), self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = ['podman', 'run', '--rm', '--network', 'host', '--name', self.name,
               '-e', 'SAWYER_MASTER_PORT=%d' % self.port, self.image] + self.args
        with open(self.log_path, 'wb') as log:
            log.write(('$ %s\n' % ' '.join(cmd)).encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, env=podman_environ(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        return self

    def stop(self, timeout=15.0):
        if self.name is not None:
            subprocess.run(['podman', 'stop', '--ignore', '-t', '%d' % timeout, self.name],
                           env=podman_environ(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout + 60)
        return super().stop(timeout)


def podman_environ():
    """podman's environment: deploy/containers.conf unless CONTAINERS_CONF says otherwise."""
    env = dict(os.environ)
    env.setdefault('CONTAINERS_CONF', str(REPO / 'deploy' / 'containers.conf'))
    return env


def check_image(image):
    """None when podman has `image`; else why not (a sentence for the user)."""
    try:
        proc = subprocess.run(['podman', 'image', 'exists', image], env=podman_environ(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except FileNotFoundError:
        return 'cannot run image %s: podman not found (apt-get install podman runc ' \
               'catatonit)' % image
    if proc.returncode != 0:
        return 'image %s not found in podman\'s store: build it with scripts/image' % image
    return None


class Member:
    """One robot of the fleet and the CMD run against it.

    status: 'pending', 'booting', 'ready' (publishing /robot/state), 'running' (CMD), then
    one of 'ok', 'cmd failed', 'boot failed', 'port in use', 'timed out', 'interrupted'.
    """

    def __init__(self, index, sawyer_args, log_dir, port=None, image=None):
        self.index = index
        self.log_dir = Path(log_dir) / ('robot_%d' % index)
        if image is None:
            self.robot = RobotProcess(sawyer_args, self.log_dir / 'sawyer.log',
                                      self.log_dir / 'ros_log')
        else:
            self.robot = ContainerRobot(image, sawyer_args, self.log_dir / 'sawyer.log',
                                        self.log_dir / 'ros_log')
        if port is not None:
            self.robot.port = port
            self.robot.master_uri = 'http://127.0.0.1:%d' % port
        self.cmd_log = self.log_dir / 'cmd.log'
        self.cmd = None              # subprocess.Popen of CMD
        self.status = 'pending'
        self.detail = ''
        self.exit_code = None
        self.boot_s = None
        self.cmd_s = None

    @property
    def port(self):
        return self.robot.port

    def start(self):
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if port_in_use(self.port):
            self.status = 'port in use'
            self.detail = 'port %d on 127.0.0.1 is in use: no robot started there' % self.port
            return
        # RobotProcess.start() points this process at the robot's master; the fleet itself
        # talks ROS to no robot, so that is harmless, but keep the caller's value.
        saved = {k: os.environ.get(k) for k in ('ROS_MASTER_URI', 'ROS_IP', 'ROS_LOG_DIR')}
        try:
            self.robot.start()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        self.status = 'booting'
        self._t0 = time.monotonic()

    def poll_boot(self, deadline):
        """While booting: True once /robot/state is published; marks a boot failure."""
        if self.status != 'booting':
            return False
        if self.robot.has_publisher('/robot/state'):
            self.boot_s = time.monotonic() - self._t0
            self.status = 'ready'
            return True
        if not self.robot.alive():
            self.status = 'boot failed'
            self.detail = 'scripts/sawyer exited with code %s before /robot/state was ' \
                          'published' % self.robot.proc.returncode
        elif time.monotonic() > deadline:
            self.status = 'boot failed'
            self.detail = 'no /robot/state on %s within %.0f s' % (
                self.robot.master_uri, deadline - self._t0)
        return False

    def environ(self, size, extra_env=None):
        env = self.robot.environ()
        env.update({'FLEET_INDEX': str(self.index), 'FLEET_SIZE': str(size),
                    'FLEET_LOG_DIR': str(self.log_dir)})
        env['ROS_LOG_DIR'] = str(self.log_dir / 'cmd_ros_log')     # not the robot's
        env.update(extra_env or {})
        return env

    def run_cmd(self, argv, size, extra_env=None):
        with open(self.cmd_log, 'wb') as log:
            log.write(('$ FLEET_INDEX=%d ROS_MASTER_URI=%s %s\n' % (
                self.index, self.robot.master_uri, ' '.join(argv))).encode())
            log.flush()
            try:
                self.cmd = subprocess.Popen(
                    argv, env=self.environ(size, extra_env), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent)
            except OSError as exc:
                self.status = 'cmd failed'
                self.exit_code = 127
                self.detail = 'cannot run %s: %s' % (argv[0], exc)
                log.write(('%s\n' % self.detail).encode())
                return
        self.status = 'running'
        self._t0 = time.monotonic()

    def poll_cmd(self, deadline):
        """While running: True once CMD has ended (or timed out and was stopped)."""
        if self.status != 'running':
            return True
        code = self.cmd.poll()
        if code is None and deadline is not None and time.monotonic() > deadline:
            self.stop_cmd()
            self.status = 'timed out'
            self.exit_code = self.cmd.returncode
            self.detail = 'CMD still running after %.0f s: stopped' % (deadline - self._t0)
            self.cmd_s = time.monotonic() - self._t0
            return True
        if code is None:
            return False
        self.cmd_s = time.monotonic() - self._t0
        self.exit_code = code
        self.status = 'ok' if code == 0 else 'cmd failed'
        if code != 0:
            self.detail = 'CMD exited with code %d' % code
        return True

    def stop_cmd(self):
        """SIGTERM to CMD's process group, then SIGKILL; and any descendant it left."""
        if self.cmd is None:
            return
        tree = descendants(self.cmd.pid)
        for sig, wait in ((signal.SIGTERM, CMD_STOP_TIMEOUT), (signal.SIGKILL, 5.0)):
            if self.cmd.poll() is not None:
                break
            try:
                os.killpg(self.cmd.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.cmd.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.cmd.pid, signal.SIGKILL)     # leftovers of its group
        except (ProcessLookupError, PermissionError):
            pass
        for pid, start in tree.items():
            if proc_start_time(pid) == start:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop(self):
        self.stop_cmd()
        if self.robot.proc is not None:
            self.robot.stop()

    def record(self):
        return {'index': self.index, 'port': self.port, 'master_uri': self.robot.master_uri,
                'status': self.status, 'exit_code': self.exit_code, 'detail': self.detail,
                'boot_s': _round(self.boot_s), 'cmd_s': _round(self.cmd_s),
                'sawyer_log': str(self.robot.log_path), 'cmd_log': str(self.cmd_log)}


def _round(value):
    return None if value is None else round(value, 2)


class Fleet:
    """N robots (Members) started together; usable from Python (the bench) and by main().

    sawyer_args  arguments of every scripts/sawyer (--sim-time is added when missing)
    log_dir      robot_<i>/{sawyer.log,ros_log/,cmd.log} go there
    base_port    robot i's master on base_port + i; None: free ports
    image        run each robot in a container of this image (None: scripts/sawyer here)
    """

    def __init__(self, sawyer_args, log_dir, base_port=None, image=None):
        self.sawyer_args = list(sawyer_args)
        if '--sim-time' not in self.sawyer_args:
            self.sawyer_args.insert(0, '--sim-time')
        self.log_dir = Path(log_dir)
        self.base_port = base_port
        self.image = image
        self.members = []

    def add(self, count=1):
        """Start `count` more robots (not yet waited for); returns the new Members."""
        taken = {m.port for m in self.members}
        new = []
        for _ in range(count):
            index = len(self.members)
            port = self.base_port + index if self.base_port is not None else None
            while port is None or (self.base_port is None and port in taken):
                port = free_port()
            taken.add(port)
            member = Member(index, self.sawyer_args, self.log_dir, port, self.image)
            self.members.append(member)
            new.append(member)
            member.start()
        return new

    def wait_booted(self, timeout=BOOT_TIMEOUT, members=None):
        """Poll every booting robot until it is ready or failed; a failed one is stopped
        at once (the others go on). Returns the ready Members."""
        members = self.members if members is None else members
        deadline = time.monotonic() + timeout
        while any(m.status == 'booting' for m in members):
            for m in members:
                m.poll_boot(deadline)
                if m.status == 'boot failed' and m.robot.proc is not None:
                    m.robot.stop()
            raise_if_interrupted()
            time.sleep(POLL)
        return [m for m in members if m.status == 'ready']

    def run(self, argv, timeout=None, extra_env=None, members=None):
        """Run argv against every booted robot that is still up, all at once; wait for
        all (each up to `timeout` s). Returns the Members it ran on."""
        members = [m for m in (self.members if members is None else members)
                   if m.boot_s is not None and m.robot.alive()]
        for m in members:
            m.run_cmd(argv, len(self.members), extra_env)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not all([m.poll_cmd(deadline) for m in members]):
            raise_if_interrupted()
            time.sleep(POLL)
        return members

    def stop(self):
        """Stop every CMD and robot, in parallel (each robot takes up to its stop
        timeout)."""
        threads = [threading.Thread(target=m.stop, daemon=True) for m in self.members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def records(self):
        return [m.record() for m in self.members]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# --- command line --------------------------------------------------------------------------
def parse_args(argv):
    if '--' in argv:
        split = argv.index('--')
        own, cmd = argv[:split], argv[split + 1:]
    else:
        own, cmd = argv, []
    p = argparse.ArgumentParser(
        prog='scripts/fleet', usage='scripts/fleet N [OPTIONS] -- CMD [ARGS...]',
        description='Start N emulated Sawyers (own ROS masters, sim time), run CMD against '
                    'each with ROS_MASTER_URI, FLEET_INDEX, FLEET_SIZE and FLEET_LOG_DIR '
                    'set, report each exit code with its logs, stop everything.')
    p.add_argument('n', type=int, metavar='N', help='number of robots (1..64)')
    p.add_argument('--speed', default='1', metavar='X',
                   help="simulated-time speed of every robot, a number > 0 or 'max' (default 1)")
    p.add_argument('--sawyer-arg', action='append', default=[], metavar='ARG',
                   help='one more scripts/sawyer argument for every robot (repeatable), '
                        'e.g. --sawyer-arg=--gripper')
    p.add_argument('--base-port', type=int, default=None, metavar='P',
                   help='robot i gets its master on port P+i (default: free ports)')
    p.add_argument('--boot-timeout', type=float, default=BOOT_TIMEOUT, metavar='S',
                   help='seconds for every robot to publish /robot/state (default %.0f)'
                        % BOOT_TIMEOUT)
    p.add_argument('--timeout', type=float, default=None, metavar='S',
                   help='seconds CMD may run on each robot before it is stopped (default: none)')
    p.add_argument('--image', default=None, metavar='NAME',
                   help='run each robot in a container of this image (scripts/image builds '
                        'localhost/intera_rt:latest) instead of scripts/sawyer here')
    p.add_argument('--logs', default=None, metavar='DIR',
                   help='where robot_<i>/ logs and fleet.json go (default: fleet_out/<time>)')
    args = p.parse_args(own)
    if not cmd:
        p.error('no CMD: give it after --, e.g. scripts/fleet 2 -- python my_episode.py')
    if not 1 <= args.n <= 64:
        p.error('N = %d: expected 1..64 robots' % args.n)
    if args.base_port is not None and not 1024 <= args.base_port <= 65535 - args.n:
        p.error('--base-port %d: expected 1024..%d for %d robots'
                % (args.base_port, 65535 - args.n, args.n))
    for name in ('boot_timeout', 'timeout'):
        value = getattr(args, name)
        if value is not None and not value > 0:
            p.error('--%s %r: expected a number of seconds > 0' % (name.replace('_', '-'), value))
    from intera_rt.sawyer import parse_speed
    try:
        parse_speed(args.speed)
    except argparse.ArgumentTypeError as exc:
        p.error('--speed: %s' % exc)
    if args.image is not None:
        problem = check_image(args.image)
        if problem:
            p.error('--image: %s' % problem)
    args.cmd = cmd
    return args


_INTERRUPTS = []              # the signals received (main's handler), oldest first


def _interrupt(signum, _frame):
    # (remembered, not raised here: an exception raised from a handler can land where
    # Python swallows it, such as logging's fork handlers inside subprocess.Popen, and the
    # Ctrl-C would be lost while the fleet goes on)
    _INTERRUPTS.append(signal.Signals(signum).name)


def raise_if_interrupted():
    """KeyboardInterrupt (naming the signal) once main's handler has caught SIGINT,
    SIGTERM or SIGHUP; the fleet's waits call it every POLL."""
    if _INTERRUPTS:
        raise KeyboardInterrupt(_INTERRUPTS[0])


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    log_dir = Path(args.logs or os.path.join('fleet_out', time.strftime('%Y%m%d-%H%M%S')))
    log_dir = log_dir.resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    sawyer_args = ['--sim-time', '--speed', args.speed] + args.sawyer_arg
    fleet = Fleet(sawyer_args, log_dir, args.base_port, args.image)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    interrupted = None
    t0 = time.monotonic()
    print('[fleet] %d robot(s): scripts/sawyer %s%s; logs in %s'
          % (args.n, ' '.join(sawyer_args), ' in %s' % args.image if args.image else '',
             log_dir), flush=True)
    try:
        fleet.add(args.n)
        ready = fleet.wait_booted(args.boot_timeout)
        for m in fleet.members:
            if m.status == 'ready':
                print('[fleet] robot %d up on %s after %.1f s'
                      % (m.index, m.robot.master_uri, m.boot_s), flush=True)
        print('[fleet] running on %d robot(s): %s' % (len(ready), ' '.join(args.cmd)),
              flush=True)
        fleet.run(args.cmd, args.timeout)
        raise_if_interrupted()
    except KeyboardInterrupt as exc:
        interrupted = str(exc) or 'SIGINT'
        for m in fleet.members:
            if m.status in ('pending', 'booting', 'ready', 'running'):
                m.status = 'interrupted'
                m.detail = 'stopped on %s' % interrupted
        print('\n[fleet] %s: stopping everything' % interrupted, file=sys.stderr, flush=True)
    finally:
        # A second Ctrl-C must not cut the clean-up short.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        fleet.stop()
    records = fleet.records()
    summary = {'n': args.n, 'cmd': args.cmd, 'sawyer_args': sawyer_args,
               'wall_s': round(time.monotonic() - t0, 1), 'interrupted': interrupted,
               'robots': records}
    with open(log_dir / 'fleet.json', 'w') as f:
        json.dump(summary, f, indent=2)
        f.write('\n')
    report(fleet.members)
    print('[fleet] %d of %d ok; summary in %s' % (
        sum(m.status == 'ok' for m in fleet.members), args.n, log_dir / 'fleet.json'))
    if interrupted:
        return 130
    return 0 if all(m.status == 'ok' for m in fleet.members) else 1


def report(members, tail=15):
    """A line per robot; for each failed one the tail of the log that explains it."""
    for m in members:
        print('[fleet] robot %d  port %-5d  %-12s %s' % (m.index, m.port, m.status, m.detail))
    for m in members:
        if m.status in ('ok', 'interrupted'):
            continue
        log = m.robot.log_path if m.status == 'boot failed' else m.cmd_log
        if m.status == 'port in use':
            continue
        print('[fleet] --- robot %d: last lines of %s' % (m.index, log))
        try:
            lines = log.read_text(errors='replace').splitlines()[-tail:]
        except OSError as exc:
            lines = ['(no log: %s)' % exc]
        for line in lines:
            print('[fleet]   | ' + line)


if __name__ == '__main__':
    sys.exit(main())
