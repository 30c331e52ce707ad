"""No output of a script replaces one of its inputs, and no two outputs are one file.

The Python twin of examples/common/paths_apart.{hpp,cpp}, with the same
rules and the same messages. Before any work, a script lists the files it
reads and the files it will write, each with the flag or argument it came
from, and checks them:

    paths = PathsApart()
    paths.reads("SOURCE", arguments.source).reads("--data", arguments.data)
    paths.writes("OUT", arguments.out).writes("--report", arguments.report)
    paths.check()  # PathsClash: "--report 'x' is an input (--data): ..."

"One file" is file identity, not spelling: two paths name one file when they
reach the same device and inode after following symbolic links (so a link, a
hard link, "./x" and "dir/../x" are all caught); a path that does not exist
yet is compared by its resolved absolute form. An empty path or None (a flag
not given) takes no part.

The one input an output may replace is the file it continues: writes_next
names it. The scripts' writes are atomic (a temporary file renamed), so such
a replacement happens only after the input has been read.

check() raises PathsClash, bad input like torch_bridge.BridgeError: the
scripts print its one line and exit 2. (It is not BridgeError itself because
torch_bridge.py imports this file: run as a program, its BridgeError would be
another class than the one this file could import.)
"""
import fnmatch
import os

# Paths quoted in a message: long enough to recognise, short however long
# (paths_apart.cpp's kQuotedPathChars).
QUOTED_PATH_CHARS = 160


class PathsClash(Exception):
    """An output that is an input or another output; the message names both."""


def utf8_sequence_length(data, i):
    """The length of the valid UTF-8 sequence starting at data[i], or 0
    (tensor/printable.hpp's utf8_sequence_length)."""
    lead = data[i]
    length = 4 if 0xf0 <= lead <= 0xf4 else 3 if lead >= 0xe0 else 2 if lead >= 0xc2 else 0
    if length == 0 or i + length > len(data):
        return 0
    return length if all(data[i + k] & 0xc0 == 0x80 for k in range(1, length)) else 0


def quoted(path, max_chars=QUOTED_PATH_CHARS):
    """A path as a message shows it, byte for byte as tensor/printable.hpp's
    printable(): control characters (C0, DEL, C1) and bytes that are not
    UTF-8 become \\xNN or \\u00NN, and past `max_chars` bytes it is cut, ending in "…"."""
    data = os.fsencode(path)
    out = bytearray()
    i = 0
    while i < len(data) and len(out) < max_chars:
        byte = data[i]
        if 0x20 <= byte < 0x7f:
            out.append(byte)
            i += 1
            continue
        length = utf8_sequence_length(data, i) if byte >= 0x80 else 0
        if length == 0:
            out += b"\\x%02x" % byte
            i += 1
        elif byte == 0xc2 and data[i + 1] <= 0x9f:
            out += b"\\u00%02x" % data[i + 1]
            i += 2
        else:
            out += data[i:i + length]
            i += length
    if i < len(data):
        out += "…".encode()
    return out.decode("utf-8", "surrogateescape")


def key_of(path):
    """What decides whether two paths are one file: (device, inode) after
    following links when the path exists, else its resolved absolute form."""
    try:
        status = os.stat(path)
        inode = (status.st_dev, status.st_ino)
    except (OSError, ValueError):
        inode = None
    return inode, os.path.realpath(os.path.abspath(path))


def same_file(a, b):
    if a[0] is not None and b[0] is not None:
        return a[0] == b[0]
    return a[0] is None and b[0] is None and a[1] == b[1]


def among_matching(file, folder, pattern):
    """Whether `file` is, or will be, one of the files matching `pattern` in
    `folder`: its resolved form lies in the folder under a matching name, or
    it is the same file as one of the folder's matching entries (a hard link)."""
    target, place = key_of(file), key_of(folder)
    parent, name = os.path.split(target[1])
    if same_file(key_of(parent), place) and fnmatch.fnmatchcase(name, pattern):
        return True
    if target[0] is None or place[0] is None:
        return False
    try:
        entries = os.listdir(folder)
    except OSError:
        return False
    return any(fnmatch.fnmatchcase(entry, pattern)
               and same_file(key_of(os.path.join(folder, entry)), target) for entry in entries)


class PathsApart:
    """The files a script reads and writes, each with the flag it came from."""

    def __init__(self):
        self.inputs = []   # (flag, path)
        self.outputs = []  # (flag, path, pattern, continues): pattern "" for one file

    def reads(self, flag, path):
        """A file the script reads; `flag` names where it came from ("--data",
        or "the data file SOURCE names" for a file a bundle names)."""
        if path:
            self.inputs.append((flag, path))
        return self

    def writes(self, flag, path):
        """A file the script writes."""
        if path:
            self.outputs.append((flag, path, "", None))
        return self

    def writes_next(self, flag, path, continues):
        """A file the script writes as the next version of the input that
        `continues` (an earlier reads() flag) names; it may be that input, no other."""
        if path:
            self.outputs.append((flag, path, "", continues))
        return self

    def writes_matching(self, flag, folder, pattern):
        """The files the script writes into `folder` whose names it learns as
        it runs, all matching `pattern` (fnmatch's '*', e.g. "attention_*.svg")."""
        if folder:
            self.outputs.append((flag, folder, pattern, None))
        return self

    def check(self):
        """Raises PathsClash naming both flags and the path for the first output
        that is an input (other than the one it continues) or another output."""
        for flag, path, pattern, continues in self.outputs:
            for input_flag, input_path in self.inputs:
                if not pattern:
                    if input_flag == continues or not same_file(key_of(path), key_of(input_path)):
                        continue
                    spelled = "" if input_path == path else f" '{quoted(input_path)}'"
                    raise PathsClash(
                        f"{flag} '{quoted(path)}' is an input ({input_flag}{spelled}): writing it "
                        f"would replace it; give {flag} another path")
                if among_matching(input_path, path, pattern):
                    raise PathsClash(
                        f"{flag} '{quoted(path)}' would write its {pattern} files over "
                        f"'{quoted(input_path)}', an input ({input_flag}); give {flag} another "
                        "folder")
        for i, a in enumerate(self.outputs):
            for b in self.outputs[i + 1:]:
                if bool(a[2]) != bool(b[2]):
                    family, file = (a, b) if a[2] else (b, a)
                    if among_matching(file[1], family[1], family[2]):
                        raise PathsClash(
                            f"{file[0]} '{quoted(file[1])}' is one of the {family[2]} files "
                            f"{family[0]} '{quoted(family[1])}' writes: one would overwrite the "
                            "other; give them different paths")
                    continue
                # Two files, or two families of names learnt while running in one folder.
                if same_file(key_of(a[1]), key_of(b[1])):
                    raise PathsClash(
                        f"{a[0]} '{quoted(a[1])}' and {b[0]} '{quoted(b[1])}' are one "
                        f"{'folder' if a[2] else 'file'}: one would overwrite the other; give "
                        "them different paths")
