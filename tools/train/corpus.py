"""Python source corpus gathered from the running interpreter's installation.

Walks the standard library and every site-packages / dist-packages folder of the interpreter that runs the
recipe, keeps .py files that decode as UTF-8, removes exact duplicates (by content hash), and splits train /
held-out *by file* with a keyed hash of the content, so the split depends only on the seed and the files.
"""
import collections
import hashlib
import os
import site
import sys
import sysconfig


def source_roots():
    """Folders to walk: the stdlib plus every site-packages / dist-packages folder this interpreter sees."""
    roots = []
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            roots.append(paths[key])
    try:
        roots.extend(site.getsitepackages())
    except AttributeError:  # some embedded interpreters lack it
        pass
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        roots.append(site.getusersitepackages())
    roots.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    seen, out = set(), []
    for r in roots:
        r = os.path.realpath(r)
        if os.path.isdir(r) and r not in seen:
            seen.add(r)
            out.append(r)
    return sorted(out)


def describe_root(path):
    """A root as a card shows it: under the interpreter's prefix (a virtual environment's) "{prefix}/...", under
    its base installation "{base_prefix}/...", so a card names the layout, not where one machine keeps it."""
    for name, prefix in (("prefix", sys.prefix), ("base_prefix", sys.base_prefix)):
        prefix = os.path.realpath(prefix)
        if prefix != os.sep and (path == prefix or path.startswith(prefix + os.sep)):
            return "{" + name + "}" + path[len(prefix):]
    return path


def _package_of(path, roots):
    """'numpy' for .../site-packages/numpy/core/x.py; 'stdlib' for files of the standard library."""
    best = None
    for r in roots:
        if path.startswith(r + os.sep) and (best is None or len(r) > len(best)):
            best = r
    rel = os.path.relpath(path, best) if best else path
    head = rel.split(os.sep)[0]
    if best and not best.endswith(("site-packages", "dist-packages")):
        return "stdlib"
    return head[:-3] if head.endswith(".py") else head


def _keyed(seed, digest):
    return hashlib.sha256(f"{seed}:{digest}".encode()).hexdigest()


def gather(seed, max_train_bytes, max_heldout_bytes, heldout_permille=20, min_bytes=256, max_file_bytes=400_000,
           max_read_bytes=1_500_000_000, log=print):
    """Returns dict(train=[texts], heldout=[texts], stats={...}).

    Files are visited in path order, deduplicated by SHA-256 of their bytes, then ordered by a seed-keyed hash of
    that digest; a file is held out when its keyed hash falls in the held-out fraction. Each split is filled in
    keyed-hash order until its byte cap, so a cap picks a seed-dependent random subset of whole files.
    """
    roots = source_roots()
    files = []
    for r in roots:
        for dirpath, dirnames, filenames in os.walk(r):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".py"):
                    files.append(os.path.join(dirpath, f))
    by_digest = {}
    n_seen = n_bad = n_size = 0
    real_seen = set()
    n_read = 0
    for p in files:
        if n_read > max_read_bytes:  # a huge installation: stop reading (path order keeps this deterministic)
            break
        rp = os.path.realpath(p)
        if rp in real_seen:
            continue
        real_seen.add(rp)
        n_seen += 1
        try:
            size = os.path.getsize(rp)
            if size < min_bytes or size > max_file_bytes:
                n_size += 1
                continue
            with open(rp, "rb") as fh:
                raw = fh.read()
            n_read += len(raw)
        except OSError:
            n_bad += 1
            continue
        if b"\x00" in raw:
            n_bad += 1
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            n_bad += 1
            continue
        text = text.replace("\r\n", "\n")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest not in by_digest:
            by_digest[digest] = (rp, text)
    order = sorted(by_digest, key=lambda d: _keyed(seed, d))
    train, heldout = [], []
    tb = hb = 0
    pkg_bytes = collections.Counter()
    for d in order:
        path, text = by_digest[d]
        nbytes = len(text.encode("utf-8"))
        is_heldout = int(_keyed(seed + 7919, d)[:8], 16) % 1000 < heldout_permille
        if is_heldout:
            if hb + nbytes > max_heldout_bytes:
                continue
            heldout.append(text)
            hb += nbytes
        else:
            if tb + nbytes > max_train_bytes:
                continue
            train.append(text)
            tb += nbytes
            pkg_bytes[_package_of(path, roots)] += nbytes
    stats = dict(
        python=sys.version.split()[0], roots=[describe_root(r) for r in roots], files_found=len(files),
        files_read=n_seen, bytes_read=n_read, files_skipped_size=n_size, files_skipped_unreadable=n_bad,
        unique_files=len(by_digest), duplicates_removed=n_seen - n_size - n_bad - len(by_digest),
        train_files=len(train), train_bytes=tb, heldout_files=len(heldout), heldout_bytes=hb,
        heldout_permille=heldout_permille, max_train_bytes=max_train_bytes, top_packages=pkg_bytes.most_common(15))
    log(f"corpus: {len(files)} .py files under {len(roots)} roots, {len(by_digest)} unique; "
        f"train {len(train)} files / {tb / 1e6:.1f} MB, held-out {len(heldout)} files / {hb / 1e6:.2f} MB")
    return dict(train=train, heldout=heldout, stats=stats)
