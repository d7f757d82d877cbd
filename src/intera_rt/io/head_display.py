"""The head's screen: what an image sent to /robot/head_display makes it show. No ROS.

The screen is 1024×600 pixels. An image (sensor_msgs/Image; the SDK sends bgr8 from
cv2.imread) is drawn top-left aligned on black; the screen keeps it until the next one.
Encodings cv_bridge converts to bgr8 are taken (bgr8, rgb8, bgra8, rgba8, mono8); an image
larger than the screen, in another encoding, or whose data does not match its size is
refused with a ValueError naming the field and value (the screen keeps what it showed).
"""
import numpy as np

SCREEN_WIDTH, SCREEN_HEIGHT = 1024, 600
# encoding → (channels, channel order taken to BGR)
ENCODINGS = {'bgr8': (3, (0, 1, 2)), 'rgb8': (3, (2, 1, 0)), 'bgra8': (4, (0, 1, 2)),
             'rgba8': (4, (2, 1, 0)), 'mono8': (1, (0, 0, 0))}


def blank_screen():
    """The screen with nothing shown: black, (SCREEN_HEIGHT, SCREEN_WIDTH, 3) bgr8."""
    return np.zeros((SCREEN_HEIGHT, SCREEN_WIDTH, 3), np.uint8)


def screen_image(width, height, encoding, step, data):
    """The whole screen showing an image: (SCREEN_HEIGHT, SCREEN_WIDTH, 3) uint8 bgr8, the
    image top-left aligned on black.

    Args:
        width, height, encoding, step, data: the sensor_msgs/Image fields.
    Raises:
        ValueError naming the field at fault.
    """
    if encoding not in ENCODINGS:
        raise ValueError('encoding %r: the head display shows %s' % (encoding, ', '.join(ENCODINGS)))
    if not (0 < width <= SCREEN_WIDTH and 0 < height <= SCREEN_HEIGHT):
        raise ValueError('%d×%d (width × height): the head display shows images from 1×1 up to '
                         '%d×%d' % (width, height, SCREEN_WIDTH, SCREEN_HEIGHT))
    channels, order = ENCODINGS[encoding]
    row = width * channels
    if step < row:
        raise ValueError('step %d: a %d-pixel row of %s takes %d bytes' % (step, width, encoding, row))
    if len(data) < step * (height - 1) + row:
        raise ValueError('data has %d bytes: %d rows of step %d need %d'
                         % (len(data), height, step, step * (height - 1) + row))
    rows = np.frombuffer(bytes(data[:step * height]) if len(data) >= step * height
                         else bytes(data) + bytes(step * height - len(data)), np.uint8)
    img = rows.reshape(height, step)[:, :row].reshape(height, width, channels)
    screen = blank_screen()
    screen[:height, :width] = img[..., list(order)]
    return screen


def screen_from_file(path):
    """The whole screen showing the image file at `path` (PNG, JPEG, ... as Pillow reads
    them), top-left aligned as screen_image.

    Raises:
        ValueError naming the path: unreadable, not an image, or larger than the screen.
    """
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as img:
            rgb = np.asarray(img.convert('RGB'))
    except (OSError, UnidentifiedImageError) as exc:
        raise ValueError('%r: not an image file the head display can read (%s)' % (path, exc)) from None
    height, width = rgb.shape[:2]
    try:
        return screen_image(width, height, 'rgb8', 3 * width, rgb.tobytes())
    except ValueError as exc:
        raise ValueError('%r: %s' % (path, exc)) from None


def screen_linear_rgb(screen):
    """A screen image (bgr8) as linear rgb float32 in [0, 1], as the renderer composes
    colours (its output gets the display gamma back in render.to_bgr8)."""
    return (screen[..., ::-1].astype(np.float32) / 255.0) ** 2.2
