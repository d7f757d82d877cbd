"""A virtual X display (Xvfb) and screenshots of it, for running RViz headless: the RViz
test (test/test_rviz.py) and scripts/rviz_screenshot. No ROS here.

Rendering is Mesa's software OpenGL (llvmpipe): no GPU needed. `VirtualDisplay.env()` gives
the environment a program started on it needs (DISPLAY, LIBGL_ALWAYS_SOFTWARE=1).
"""
import os
import shutil
import subprocess
import time

XVFB = 'Xvfb'
START_TIMEOUT = 10.0        # s for Xvfb to report its display number


class VirtualDisplay:
    """An Xvfb server on a free display number, screen `width`×`height`×24.

    Use as a context manager, or start() / stop(). `display` is e.g. ':42'.
    """

    def __init__(self, width=1280, height=720):
        self.size = (int(width), int(height))
        self.proc = None
        self.display = None

    @staticmethod
    def available():
        """Whether Xvfb is installed (scripts/setup installs it)."""
        return shutil.which(XVFB) is not None

    def start(self):
        if not self.available():
            raise RuntimeError('Xvfb not found on PATH (Debian package xvfb; scripts/setup '
                               'installs it)')
        read_fd, write_fd = os.pipe()
        try:
            # -displayfd: Xvfb picks a free display number and writes it when ready to accept
            # connections (no race on a number chosen here, no polling for the socket).
            self.proc = subprocess.Popen(
                [XVFB, '-displayfd', str(write_fd), '-screen', '0',
                 '%dx%dx24' % self.size, '-nolisten', 'tcp', '-noreset'],
                pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True)
            os.close(write_fd)
            write_fd = None
            number = self._read_number(read_fd)
        finally:
            if write_fd is not None:
                os.close(write_fd)
            os.close(read_fd)
        self.display = ':%d' % number
        return self

    def _read_number(self, fd):
        deadline = time.monotonic() + START_TIMEOUT
        data = b''
        os.set_blocking(fd, False)
        while not data.endswith(b'\n'):
            if self.proc.poll() is not None:
                raise RuntimeError('Xvfb exited (code %s): %s' % (
                    self.proc.returncode, self.proc.stderr.read().decode(errors='replace')[-500:]))
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError('Xvfb did not report a display within %.0f s' % START_TIMEOUT)
            try:
                chunk = os.read(fd, 64)
            except BlockingIOError:
                chunk = None
            if chunk:
                data += chunk
            else:
                time.sleep(0.02)
        return int(data.strip())

    def env(self, base=None):
        """`base` (default os.environ) with DISPLAY set to this display and software GL."""
        env = dict(os.environ if base is None else base)
        env['DISPLAY'] = self.display
        env['LIBGL_ALWAYS_SOFTWARE'] = '1'
        return env

    def screenshot(self):
        """The whole screen now, a PIL RGB image."""
        from PIL import ImageGrab
        return ImageGrab.grab(xdisplay=self.display).convert('RGB')

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
