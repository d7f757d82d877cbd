"""XML the robot reads from others, checked before any URDF parser sees it: /robot_description,
the armnav description, URDF fragments. No ROS.

A robot description is a parameter anyone on the network may set. The parsers behind it
(urdf_parser_py on lxml, Pinocchio on urdfdom/TinyXML2) are not made for hostile input:
how they treat entity expansion, external entities, nesting and size depends on their
versions (libxml2 ≥ 2.12 refuses a billion-laughs document, older ones expand it; TinyXML2
skips a DTD and parses what follows), and what fails fails with a parser's exception, which
a node does not expect. `check_xml` refuses, with an UnsafeXMLError (a ValueError) naming
what and why:

  * anything but text or bytes, and text that is not UTF-8;
  * more than `max_bytes` (default 4 MB, far above any robot's URDF);
  * a DOCTYPE (DTD) or an entity declaration or reference: a URDF needs none, and they are
    what entity-expansion and external-entity attacks are made of;
  * elements nested deeper than `max_depth` (default 32; a URDF's are 4 deep) or more than
    `max_elements` (default 100 000) of them;
  * XML that is not well-formed (the parser's line and column), and a root other than
    `root` (default robot).

It parses with lxml with entity resolution, DTD loading and network access off; the parse
is cheap next to building a model. `safe_urdf(text, what)`
returns the text (str) once it passed: call it where a URDF enters, then parse as before.
"""
from lxml import etree

MAX_BYTES = 4 << 20
MAX_DEPTH = 32
MAX_ELEMENTS = 100000


class UnsafeXMLError(ValueError):
    """XML refused before parsing it for real; the message names what and why."""


def check_xml(text, what='URDF', max_bytes=MAX_BYTES, max_depth=MAX_DEPTH,
              max_elements=MAX_ELEMENTS, root='robot'):
    """The root element (lxml) of `text` once it passed the checks above; UnsafeXMLError
    otherwise. `root`: the required root tag (None: any)."""
    if isinstance(text, str):
        data = text.encode('utf-8', 'surrogatepass')
    elif isinstance(text, (bytes, bytearray)):
        data = bytes(text)
    else:
        raise UnsafeXMLError('%s: expected XML text, got %s' % (what, type(text).__name__))
    if len(data) > max_bytes:
        raise UnsafeXMLError('%s is %d bytes, more than the %d allowed' % (what, len(data), max_bytes))
    lowered = data.lower()
    for marker, name in ((b'<!doctype', 'a DOCTYPE (DTD)'), (b'<!entity', 'an entity declaration')):
        if marker in lowered:
            raise UnsafeXMLError('%s declares %s: a URDF needs none, and entity expansion and '
                                 'external entities are not allowed' % (what, name))
    parser = etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True,
                             dtd_validation=False, huge_tree=False, remove_comments=True,
                             remove_pis=True)
    try:
        element = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise UnsafeXMLError('%s is not well-formed XML: %s' % (what, exc)) from None
    except ValueError as exc:                                  # e.g. bad encoding declaration
        raise UnsafeXMLError('%s cannot be read as XML: %s' % (what, exc)) from None
    # depth and size, without recursion
    count, stack = 0, [(element, 1)]
    while stack:
        el, depth = stack.pop()
        count += 1
        if isinstance(el, etree._Entity):
            raise UnsafeXMLError('%s refers to entity %s: entities are not allowed' % (what, el.text))
        if depth > max_depth:
            raise UnsafeXMLError('%s nests elements %d deep (at line %s), more than the %d allowed'
                                 % (what, depth, el.sourceline, max_depth))
        if count > max_elements:
            raise UnsafeXMLError('%s has more than %d elements' % (what, max_elements))
        stack.extend((child, depth + 1) for child in el)
    if root is not None and element.tag != root:
        raise UnsafeXMLError('%s: the root element is <%s>, expected <%s>' % (what, element.tag, root))
    return element


def safe_urdf(text, what='URDF'):
    """`text` as str once check_xml passed (a <robot> root); UnsafeXMLError otherwise."""
    check_xml(text, what)
    return text.decode('utf-8') if isinstance(text, (bytes, bytearray)) else text
