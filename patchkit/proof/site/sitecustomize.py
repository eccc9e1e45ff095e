"""patchkit's probe: what every Python process of a benchmarked server really ran with.

This directory is put first on the server's ``PYTHONPATH``; Python's ``site``
imports ``sitecustomize`` from it at start-up, in the server and in every
process it starts (``multiprocessing`` spawn children are fresh interpreters
and run ``site`` again).  It does nothing unless ``PATCHKIT_PROBE_DIR`` names
the directory it writes to, and then:

* writes ``probe-<pid>-<start ticks>-<host>-<boot id>.jsonl`` there (``.<N>``
  before ``.jsonl`` for the Nth ``exec`` of the same process: one file per
  Python image, the chain told by ``exec_index``; a reused pid, or the same pid
  on another host writing a shared directory, is another file), one JSON object a line, appended with
  one ``os.write`` per event, so the file is complete at every moment (no
  buffer to flush, nothing lost when the process is killed);
* records identity (pid, ppid, argv, executable, prefixes, site dirs), the
  start environment, the modules already loaded (``.pth`` import lines run
  before ``sitecustomize``), and then every module file, with its size and
  mtime: a source module as ``SourceFileLoader`` checks its ``.pyc`` against
  it, from the stat the loader makes anyway (``path_stats``, replaced on the
  class: one stat a module, not two), any other file as it is found;
* records the files a program runs outside the import statement, through
  ``importlib.util.spec_from_file_location`` (then ``exec_module``: how
  generated and plug-in code is loaded) and ``runpy.run_path``: both are
  wrapped when the program imports ``importlib.util`` or ``runpy`` (the probe
  imports neither), and the file is recorded when the path is run or, for a
  spec, when it is made (a source file's spec: when its loader reads it, as
  for an import);
* wraps ``torch.distributed.init_process_group`` when the program imports
  ``torch.distributed`` (the probe never imports torch itself), and records
  the environment at the moment of the call, with backend, rank, world size,
  ``torch.__version__`` and ``torch.cuda.nccl.version()`` (only when the
  program has loaded ``torch.cuda.nccl``: no CUDA initialisation);
* then runs the ``sitecustomize`` it shadows (Debian's, or the user's own), so
  that one still runs.

Only names of the families below and of ``PATCHKIT_PROBE_ENV`` (a comma list:
``[bench].env``) are recorded; the value of a name that looks like a secret is
replaced by ``<redacted>`` before it is written.  Such a value is still checked
at ``init_process_group``: ``PATCHKIT_PROBE_SECRETS`` (``SALT;NAME=HEX,...``,
HEX the sha256 of SALT + the expected value) lets the probe compare it in the
process and write only ``equal``, ``different`` or ``unset``.  The probe uses the standard
library only (this file cannot import patchkit: the server's interpreter may
not have it), and every error of its own is swallowed and reported as
``probe failed in pid N: ...`` on stderr and in its file; an error raised by the
shadowed ``sitecustomize`` propagates as it would without the probe.

``PATCHKIT_PROBE_FAULT=start|import|init`` raises inside the probe at that
point (the fault-injection test uses it to show the program is unaffected).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: it is not loaded at start-up, and the probe must stay cheap
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FAMILIES = ("NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "SGLANG_", "NVIDIA_", "LD_", "OMP_", "PYTHON")
# The data files read at run time that are recorded (and accounted like modules): text configs, chat templates.
DATA_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".jinja", ".jinja2")
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")  # patchkit.redact's (a test checks)
REDACTED = "<redacted>"
try:
    HERE = os.path.dirname(os.path.abspath(__file__))
except OSError:  # a deleted working directory (abspath of a relative __file__ asks for it)
    HERE = os.path.dirname(__file__)


class ProbeFault(Exception):
    """Raised on purpose by PATCHKIT_PROBE_FAULT."""


def _fault(point: str) -> None:
    if os.environ.get("PATCHKIT_PROBE_FAULT") == point:
        raise ProbeFault(f"injected fault at {point}")


def redact(name: str, value: str) -> str:
    upper = name.upper()
    return REDACTED if any(word in upper for word in SECRET_WORDS) else value


def wanted_env(environ: dict[str, str] | os._Environ[str], extra: frozenset[str]) -> dict[str, str]:
    return {name: redact(name, value) for name, value in environ.items() if name in extra or name.startswith(FAMILIES)}


class Probe:
    """The per-process recorder; one instance, installed at the front of ``sys.meta_path``."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.fd = -1
        self.path = ""
        self.pid = 0
        self.extra = frozenset(n for n in os.environ.get("PATCHKIT_PROBE_ENV", "").split(",") if n)
        salt, _, expected = os.environ.get("PATCHKIT_PROBE_SECRETS", "").partition(";")
        self.salt = salt
        self.secrets: dict[str, str] = {}
        for item in expected.split(","):
            name, _, digest = item.partition("=")
            if name and digest:
                self.secrets[name] = digest
        self.searching: set[str] = set()
        self.fault = os.environ.get("PATCHKIT_PROBE_FAULT")
        self.patched = False
        # modules whose functions the probe wraps once the program has imported them (never before)
        self.watch: dict[str, Callable[[], None]] = {
            "torch.distributed": self.patch_torch,
            "torch.distributed.distributed_c10d": self.patch_torch,
            "importlib.util": self.patch_importlib,
            "runpy": self.patch_runpy,
        }
        self.mains_seen: set[str] = set()

    # -- writing ------------------------------------------------------------------------------------
    def open(self, forked_from: int | None = None) -> None:
        self.pid = os.getpid()
        host, boot, ticks = _nodename(), _boot_id(), _start_ticks()
        # One file per (host, boot, pid, kernel start time): a reused pid, or the same pid on another host writing
        # the same shared directory, is another file; the same process after exec() finds its earlier images'
        # files taken and writes the next one of its chain (O_EXCL decides, atomically, on NFS too).
        stem = f"probe-{self.pid}-{'x' if ticks is None else ticks}-{_safe(host or 'unknown')}-{(boot or 'x')[:8]}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        image = 0
        while True:
            path = os.path.join(self.out, stem + (f".{image}" if image else "") + ".jsonl")
            try:
                self.fd = os.open(path, flags, 0o644)
                self.path = path
                break
            except FileExistsError:
                image += 1
                if image > 1000:
                    raise
        self.emit(
            {
                "kind": "process",
                "pid": self.pid,
                "ppid": os.getppid(),
                # where and when: `patchkit show` lists each process with its host and start
                "host": host,
                "boot_id": boot,
                "start_ticks": ticks,  # /proc/self/stat's starttime: the kernel's, the same across exec()
                "exec_index": image,  # 0: the process's first Python image; N: after its Nth exec()
                "started_ns": _time_ns(),
                "argv": list(sys.argv),
                "orig_argv": list(getattr(sys, "orig_argv", sys.argv)),
                "executable": sys.executable,
                "prefix": sys.prefix,
                "base_prefix": sys.base_prefix,
                "stdlib": os.path.dirname(os.__file__),
                "site_dirs": self.site_dirs(),
                "probe": os.path.abspath(__file__),
                "forked_from": forked_from,
                # where this interpreter reads a source's .pyc: the accounting judges the one that ran
                "bytecode": {
                    "tag": sys.implementation.cache_tag,
                    "optimize": sys.flags.optimize,
                    "prefix": sys.pycache_prefix,
                },
                "env": wanted_env(os.environ, self.extra),
            }
        )

    def emit(self, record: dict[str, object]) -> None:
        if self.fd >= 0:
            self.write((_dumps(record) + "\n").encode("ascii"))

    def write(self, data: bytes) -> None:
        """One record, whole; a write the filesystem refuses (a full disk, a quota) stops the recording here.

        The first refusal says so once on stderr, closes the file and leaves a
        marker next to it (``<file>.<ERRNO>``, empty: a file without data needs
        no block), from which the run is read as "proof incomplete (ENOSPC)";
        every later record is dropped in silence instead of failing again on
        every import.  A short write (the disk filled mid-record) is the same.
        """
        try:
            written = _write(self.fd, data)
            if written == len(data):
                return
            error: OSError = OSError(28, os.strerror(28) + " (a short write)")  # ENOSPC: the disk filled mid-record
        except OSError as exc:
            error = exc
        self.stop_writing(error)

    def stop_writing(self, error: OSError) -> None:
        fd, self.fd = self.fd, -1
        name = _errno_name(error)
        try:
            os.close(fd)
        except OSError:
            pass
        try:
            os.close(os.open(f"{self.path}.{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except OSError:
            pass
        try:
            sys.stderr.write(
                f"probe in pid {os.getpid()}: cannot write {self.path} ({name}: {error.strerror or error}); "
                "it stops recording: the run's proof is incomplete\n"
            )
            sys.stderr.flush()
        except Exception:
            pass

    def failed(self, exc: BaseException) -> None:
        """Report one of the probe's own errors; never raises."""
        try:
            message = f"probe failed in pid {os.getpid()}: {type(exc).__name__}: {exc}"
            sys.stderr.write(message + "\n")
            sys.stderr.flush()
            # its names now: a worker stopped before its exit line is still named by what it was
            self.emit({"kind": "error", "message": message, "title": self.title(), "mp_name": self.mp_name()})
        except Exception:
            pass

    @staticmethod
    def site_dirs() -> list[str]:
        import site

        dirs = list(getattr(site, "getsitepackages", lambda: [])())
        if getattr(site, "ENABLE_USER_SITE", False):
            dirs.append(site.getusersitepackages())
        return dirs

    # -- modules ------------------------------------------------------------------------------------
    def module(self, name: str, path: str | None, kind: str = "module") -> None:
        if not path or not os.path.isabs(path):
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        if self.fd >= 0:
            self.record_file(kind, name, path, st)

    def record_file(self, kind: str, name: str, path: str, st: os.stat_result) -> None:
        """One file that ran, with its stat: the hot path (once per module), one f-string and one write."""
        q = _quote
        line = f'{{"kind": "{kind}", "name": {q(name)}, "path": {q(path)}, "size": {st.st_size}, '
        self.write((line + f'"mtime_ns": {st.st_mtime_ns}}}\n').encode("ascii"))

    def mains(self) -> None:
        """The main script (``python FILE``) and, in a spawn child, the parent's main re-run as ``__mp_main__``:
        neither is found through ``sys.meta_path``."""
        for name in ("__main__", "__mp_main__"):
            path = getattr(sys.modules.get(name), "__file__", None)
            if isinstance(path, str) and path not in self.mains_seen:
                self.mains_seen.add(path)
                self.module(name, os.path.abspath(path))

    def already_loaded(self) -> None:
        script = sys.argv[0] if sys.argv else ""
        if script not in ("", "-c", "-m") and os.path.isfile(script):
            self.mains_seen.add(script)
            self.module("__main__", os.path.abspath(script))
        for name, mod in list(sys.modules.items()):
            path = getattr(mod, "__file__", None)
            if isinstance(path, str):
                self.module(name, path)
        for name in ("importlib.util", "runpy"):  # a .pth line imported it before the probe started
            if name in sys.modules:
                self.watch[name]()
        for site_dir in self.site_dirs():
            try:
                names = sorted(os.listdir(site_dir))
            except OSError:
                continue
            for entry in names:
                if entry.endswith(".pth"):
                    self.pth(os.path.join(site_dir, entry))

    def pth(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                runs = any(line.startswith(("import ", "import\t")) for line in f)
        except OSError:
            return
        if runs:
            self.module(os.path.basename(path), path, kind="pth")

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        """Find the spec the other finders would find, record its file, and return it.

        Returning the spec (rather than None) means no finder is asked twice.
        A finder that asks the import system for the same name from inside its
        own search meets ``searching`` and gets None from us (an ``import``
        statement holds the module's lock while it searches, so two threads
        never search one name through here at once).  This runs once per
        module: a source module is left to ``_install_path_stats``; any other
        file costs one stat, one f-string and one write.
        """
        searching = self.searching
        if name in searching:
            return None
        searching.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self:  # type: ignore[comparison-overlap]
                    continue
                find = getattr(finder, "find_spec", None)
                if find is not None:
                    spec = find(name, path, target)
                elif _LEGACY and getattr(finder, "find_module", None) is not None:
                    spec = self.legacy(finder, name, path)
                else:
                    continue
                if spec is not None:
                    break
            else:
                return None
        finally:
            searching.discard(name)
        try:
            if self.fault == "import":
                raise ProbeFault("injected fault at import")
            origin = spec.origin
            if _recorded_at_load(spec):
                pass
            elif spec.has_location and origin.__class__ is str and self.fd >= 0:
                try:
                    st = _stat(origin)
                except OSError:  # inside a zip, or gone already: nothing on disk to vouch for
                    return spec
                self.record_file("module", name, origin, st)
            if name in self.watch:
                self.wrap_loader(spec, self.watch[name])
        except Exception as exc:
            self.failed(exc)
        return spec

    def legacy(self, finder: Any, name: str, path: object) -> object:
        """A legacy meta path finder (``find_module`` only, no ``find_spec``): asked as the import system of
        Python < 3.12 asks it, its loader made a spec; the module it loads is recorded by its file when the loader
        names one (``get_filename``), and named as not accounted for when it does not."""
        loader = finder.find_module(name, path)
        if loader is None:
            return None
        bootstrap = sys.modules["_frozen_importlib"]
        origin = None
        get_filename = getattr(loader, "get_filename", None)
        if get_filename is not None:
            try:
                origin = get_filename(name)
            except Exception:
                origin = None
        spec = bootstrap.spec_from_loader(name, loader, origin=origin)
        if origin.__class__ is str and os.path.isabs(origin):
            self.module(name, origin)
        else:
            message = (
                f"probe in pid {os.getpid()}: module {name} was loaded by the legacy finder "
                f"{type(finder).__module__}.{type(finder).__qualname__} (find_module), which names no file: "
                "what it ran is not accounted for"
            )
            self.emit({"kind": "error", "message": message, "title": None, "mp_name": None})
        return spec

    # -- torch.distributed.init_process_group -------------------------------------------------------
    def wrap_loader(self, spec: object, then: Callable[[], None]) -> None:
        loader = getattr(spec, "loader", None)
        exec_module: Any = getattr(loader, "exec_module", None)
        if exec_module is None:
            return
        probe = self

        class Loader:
            """Delegates to the real loader; after the module ran, patches it and puts the real loader back."""

            def __getattr__(self, attr: str) -> object:
                return getattr(loader, attr)

            def create_module(self, spec: object) -> object:
                return loader.create_module(spec)  # type: ignore[union-attr]

            def exec_module(self, module: object) -> None:
                try:
                    exec_module(module)
                finally:
                    try:
                        module.__loader__ = loader  # type: ignore[attr-defined]
                        module_spec = getattr(module, "__spec__", None)
                        if module_spec is not None:
                            module_spec.loader = loader
                    except Exception as exc:
                        probe.failed(exc)
                then()

        spec.loader = Loader()  # type: ignore[attr-defined]

    def patch_torch(self) -> None:
        try:
            targets = [sys.modules.get("torch.distributed"), sys.modules.get("torch.distributed.distributed_c10d")]
            for mod in targets:
                original = getattr(mod, "init_process_group", None)
                if original is None or getattr(original, "__patchkit_probe__", False):
                    continue
                mod.init_process_group = self.wrapped(original)  # type: ignore[union-attr]
                self.patched = True
            if self.patched:
                self.watch.pop("torch.distributed", None)
                self.watch.pop("torch.distributed.distributed_c10d", None)
        except Exception as exc:
            self.failed(exc)

    # -- files run outside the import statement ------------------------------------------------------
    def patch_importlib(self) -> None:
        """``importlib.util.spec_from_file_location``: the file of each spec it makes (the import system's
        own finders call ``_bootstrap_external``'s, so ordinary imports never come through here)."""
        try:
            util = sys.modules.get("importlib.util")
            original = getattr(util, "spec_from_file_location", None)
            if original is None or getattr(original, "__patchkit_probe__", False):
                return
            probe = self

            def spec_from_file_location(*args: object, **kwargs: object) -> object:
                spec = original(*args, **kwargs)
                try:
                    origin = getattr(spec, "origin", None)
                    if origin.__class__ is str and not _recorded_at_load(spec):
                        probe.module(str(getattr(spec, "name", "?")), os.path.abspath(origin))
                except Exception as exc:
                    probe.failed(exc)
                return spec

            util.spec_from_file_location = _like(spec_from_file_location, original)  # type: ignore[union-attr]
            self.watch.pop("importlib.util", None)
        except Exception as exc:
            self.failed(exc)

    def patch_runpy(self) -> None:
        """``runpy.run_path``: the file it runs (a directory's or a zip's ``__main__.py``: the directory's)."""
        try:
            runpy = sys.modules.get("runpy")
            original = getattr(runpy, "run_path", None)
            if original is None or getattr(original, "__patchkit_probe__", False):
                return
            probe = self

            def run_path(path_name: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    path = os.path.abspath(os.fspath(path_name))
                    if os.path.isdir(path):
                        path = os.path.join(path, "__main__.py")
                    run_name = kwargs.get("run_name") or (args[1] if len(args) > 1 else None)
                    probe.module(str(run_name or "<run_path>"), path)
                except Exception as exc:
                    probe.failed(exc)
                return original(path_name, *args, **kwargs)

            runpy.run_path = _like(run_path, original)  # type: ignore[union-attr]
            self.watch.pop("runpy", None)
        except Exception as exc:
            self.failed(exc)

    def wrapped(self, original: object) -> object:
        import functools

        probe = self

        @functools.wraps(original)  # type: ignore[arg-type]
        def init_process_group(*args: object, **kwargs: object) -> object:
            try:
                env = wanted_env(os.environ, probe.extra)
                secrets = probe.compare_secrets() if probe.secrets else {}
            except Exception as exc:
                probe.failed(exc)
                env, secrets = None, {}
            raised = None
            try:
                return original(*args, **kwargs)  # type: ignore[operator]
            except BaseException as exc:
                raised = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                try:
                    _fault("init")
                    probe.init_record(env, args, kwargs, raised, secrets)
                except Exception as exc:
                    probe.failed(exc)

        init_process_group.__patchkit_probe__ = True  # type: ignore[attr-defined]
        return init_process_group

    def compare_secrets(self) -> dict[str, str]:
        """Each secret-looking expected variable, compared here with its expected value's salted digest:
        only ``equal``, ``different`` or ``unset`` leaves the process, never the value."""
        import hashlib

        out = {}
        for name, digest in self.secrets.items():
            value = os.environ.get(name)
            if value is None:
                out[name] = "unset"
                continue
            found = hashlib.sha256((self.salt + value).encode("utf-8", "surrogateescape")).hexdigest()
            out[name] = "equal" if found == digest else "different"
        return out

    def init_record(
        self,
        env: object,
        args: tuple[object, ...],
        kwargs: dict[str, object],
        raised: object,
        secrets: dict[str, str] | None = None,
    ) -> None:
        self.mains()
        dist = sys.modules.get("torch.distributed")
        backend = kwargs.get("backend", args[0] if args else None)
        rank = kwargs.get("rank", os.environ.get("RANK"))
        world_size = kwargs.get("world_size", os.environ.get("WORLD_SIZE"))
        if raised is None and dist is not None:
            for attr, slot in (("get_rank", "rank"), ("get_world_size", "world_size"), ("get_backend", "backend")):
                try:
                    value = getattr(dist, attr)()
                except Exception:
                    continue
                if slot == "rank":
                    rank = value
                elif slot == "world_size":
                    world_size = value
                else:
                    backend = value
        torch = sys.modules.get("torch")
        nccl_module = sys.modules.get("torch.cuda.nccl")
        nccl = None
        if nccl_module is not None:
            try:
                nccl = nccl_module.version()
            except Exception as exc:
                nccl = f"unknown ({type(exc).__name__}: {exc})"
        if isinstance(nccl, tuple):
            nccl = ".".join(str(part) for part in nccl)
        self.emit(
            {
                "kind": "init",
                "env": env,
                "backend": None if backend is None else str(backend),
                "rank": _int(rank),
                "world_size": _int(world_size),
                "torch": getattr(torch, "__version__", None),
                "nccl": None if nccl is None else str(nccl),
                "title": self.title(),
                "mp_name": self.mp_name(),
                "raised": raised,
                "secrets": secrets or {},
            }
        )

    # -- identity that appears later ------------------------------------------------------------------
    @staticmethod
    def title() -> str | None:
        """The process title (setproctitle rewrites /proc/self/cmdline), when it is not the argv."""
        try:
            with open("/proc/self/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            return None
        parts = [p.decode("utf-8", "replace") for p in raw.split(b"\0") if p]
        original = list(getattr(sys, "orig_argv", sys.argv))
        if not parts or parts == original:
            return None
        return " ".join(parts).strip() or None

    @staticmethod
    def mp_name() -> str | None:
        mp = sys.modules.get("multiprocessing.process")
        if mp is None:
            return None
        try:
            return str(mp.current_process().name)
        except Exception:
            return None

    def at_exit(self) -> None:
        try:
            if self.pid != os.getpid():
                return
            self.mains()
            self.emit({"kind": "exit", "title": self.title(), "mp_name": self.mp_name()})
        except Exception as exc:
            self.failed(exc)

    def after_fork(self) -> None:
        parent = self.pid
        try:
            if self.fd >= 0:
                os.close(self.fd)
            self.fd = -1
            self.open(forked_from=parent)
        except Exception as exc:
            self.fd = -1
            self.failed(exc)


def _dumps(value: object) -> str:
    """JSON for what the probe writes (dicts, lists, str, int, bool, None), without importing json (and re)."""
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {_dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_dumps(v) for v in value) + "]"
    return _quote(repr(value))


def _quote(text: str) -> str:
    if text.isascii():
        return _encode_string(text)
    return _encode_string(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def _like(wrapper: Any, original: Any) -> Any:
    """``wrapper`` named and documented as ``original`` (functools.wraps, without importing functools)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except AttributeError:
            pass
    wrapper.__wrapped__ = original
    wrapper.__patchkit_probe__ = True
    return wrapper


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


_stat = os.stat
_write = os.write


def _nodename() -> str | None:
    try:
        return os.uname().nodename
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        return None


def _read_small(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _boot_id() -> str | None:
    """This boot of this machine (Linux); with the host name it tells nodes, and reboots, apart."""
    text = _read_small("/proc/sys/kernel/random/boot_id")
    return text.strip() or None if text else None


def _start_ticks() -> int | None:
    """When the kernel started this process (clock ticks since boot; ``/proc/self/stat`` field 22): with the pid,
    one process for the whole boot, whatever it exec()s, never a later process that reuses the pid."""
    text = _read_small("/proc/self/stat")
    if not text or ")" not in text:
        return None
    fields = text.rpartition(")")[2].split()  # after the command name, which may hold spaces and parentheses
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in name)[:64]


def _time_ns() -> int | None:
    try:
        import time  # built in: already loaded at start-up, nothing read from disk

        return time.time_ns()
    except Exception:  # pragma: no cover - time is built into CPython
        return None


try:  # every module-level lookup is guarded: an error here would stop the sitecustomize this one shadows
    _SOURCE_LOADER: Any = sys.modules["_frozen_importlib_external"].SourceFileLoader
    # Without a cache tag the loader reads no .pyc and never calls path_stats: find_spec records then.
    _CACHE_TAG: str | None = sys.implementation.cache_tag
except Exception:  # pragma: no cover - CPython always has them; another interpreter: find_spec records all
    _SOURCE_LOADER, _CACHE_TAG = None, None


_LEGACY = sys.version_info < (3, 12)  # the import system itself asks find_module-only finders before 3.12


def _errno_name(error: OSError) -> str:
    try:
        import errno  # built in

        return str(errno.errorcode.get(error.errno or 0, "EIO"))
    except Exception:
        return "EIO"


def _recorded_at_load(spec: object) -> bool:
    """A source module ``_install_path_stats`` records as its loader reads it: finding it, or making its spec,
    is not running it (the spec of a ``.pyc`` or an extension module is still recorded when made)."""
    loader = getattr(spec, "loader", None)
    return _SOURCE_LOADER is not None and loader.__class__ is _SOURCE_LOADER and _CACHE_TAG is not None


def _install_path_stats(probe: Probe) -> None:
    """Record each source module from the stat ``SourceFileLoader.get_code`` makes to check its ``.pyc``.

    Every source module it loads (imports, ``exec_module`` of a spec from
    ``spec_from_file_location``, ``runpy``'s module runs) goes through
    ``path_stats`` exactly once, just before its code runs, so the record is
    the size and mtime that code was judged fresh against, and the probe adds
    no stat of its own to the hottest path of a server's start-up.
    """

    def path_stats(self: object, path: str) -> dict[str, object]:
        st = _stat(path)  # an OSError propagates, as from the original: the loader then ignores the .pyc
        if probe.fd >= 0:
            try:
                probe.record_file("module", str(getattr(self, "name", "?")), path, st)
            except Exception as exc:
                probe.failed(exc)
        return {"mtime": st.st_mtime, "size": st.st_size}

    path_stats.__patchkit_probe__ = True  # type: ignore[attr-defined]
    if _SOURCE_LOADER is not None:
        _SOURCE_LOADER.path_stats = path_stats


def _data_roots(probe: Probe) -> tuple[str, ...]:
    """Where a data file read is recorded: the benchmarked tree (``PATCHKIT_BENCH_TREE``), the site directories,
    and the roots of ``PATCHKIT_PROBE_ROOTS`` (``os.pathsep``-separated: a model directory, say); each with a
    trailing separator, real paths and the paths as given."""
    roots = [os.environ.get("PATCHKIT_BENCH_TREE", ""), *probe.site_dirs()]
    roots += os.environ.get("PATCHKIT_PROBE_ROOTS", "").split(os.pathsep)
    out: list[str] = []
    for root in roots:
        if root and os.path.isabs(root):
            for form in (os.path.normpath(root), os.path.realpath(root)):
                entry = form.rstrip(os.sep) + os.sep
                if entry not in out:
                    out.append(entry)
    return tuple(out)


def _install_open_hook(probe: Probe) -> None:
    """Record each data file (``DATA_SUFFIXES``) a process opens for reading under the data roots: a fused-MoE
    tuning config, a chat template, the model's ``config.json``.

    ``sys.addaudithook``: every ``open()``/``io.open``/``os.open``/``open_code``
    raises the ``open`` audit event with the path and mode (or flags), whoever
    opens it (C code that calls ``fopen`` is not seen).  The hook runs for
    every audit event of the process, so it returns at the first test that
    fails: the event's name, then the path's suffix; a hook cannot be removed,
    so a probe without a file to write to never installs it.  Each path is
    recorded once per process, with its stat then.
    """
    roots = _data_roots(probe)
    if not roots:
        return
    seen: set[str] = set()
    suffixes = DATA_SUFFIXES
    write_only = os.O_WRONLY | os.O_RDWR

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event != "open":
            return
        path = args[0]
        if path.__class__ is not str or not path.endswith(suffixes) or path in seen:
            return
        mode, flags = args[1], args[2]
        if mode.__class__ is str:
            if "r" not in mode or "+" in mode:
                return
        elif flags.__class__ is int and flags & write_only:
            return
        try:
            full = os.path.abspath(path)
            if not full.startswith(roots) or probe.fd < 0:
                return
            seen.add(path)
            probe.record_file("data", os.path.basename(full), full, _stat(full))
        except OSError:
            return  # gone, or not a file: open() itself will say so
        except Exception as exc:
            probe.failed(exc)

    sys.addaudithook(hook)


def _encode_plain(text: str) -> str:
    return '"' + "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\u{ord(c):04x}" for c in text) + '"'


try:
    from _json import encode_basestring_ascii as _encode_string
except ImportError:  # pragma: no cover - CPython always has _json
    _encode_string = _encode_plain


def _report(exc: BaseException) -> None:
    probe = getattr(sys, "_patchkit_probe", None)
    if isinstance(probe, Probe):
        probe.failed(exc)
        return
    try:
        sys.stderr.write(f"probe failed in pid {os.getpid()}: {type(exc).__name__}: {exc}\n")
    except Exception:
        pass


def _start() -> None:
    out = os.environ.get("PATCHKIT_PROBE_DIR")
    if not out or getattr(sys, "_patchkit_probe", None) is not None:
        return
    probe = Probe(out)
    try:
        probe.open()
        _fault("start")
        probe.module("sitecustomize", os.path.abspath(__file__), kind="probe")
        probe.already_loaded()
        _install_path_stats(probe)
        _install_open_hook(probe)
        sys.meta_path.insert(0, probe)  # type: ignore[arg-type]
        sys._patchkit_probe = probe  # type: ignore[attr-defined]
        import atexit

        atexit.register(probe.at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=probe.after_fork)
    except Exception as exc:
        probe.failed(exc)
        if probe.fd < 0:
            return
        sys._patchkit_probe = probe  # type: ignore[attr-defined]


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows, as ``site`` would have run it."""
    try:
        # the import system's own modules (importlib.machinery's PathFinder, importlib.util's module_from_spec):
        # importing importlib.util here would load a module the program may never import
        bootstrap = sys.modules["_frozen_importlib"]
        external = sys.modules["_frozen_importlib_external"]
        here = os.path.normcase(HERE)
        search = [p for p in sys.path if os.path.normcase(os.path.abspath(p or os.curdir)) != here]
        spec = external.PathFinder.find_spec("sitecustomize", search)
        if spec is None or spec.loader is None:
            return
        probe = getattr(sys, "_patchkit_probe", None)
        if probe is not None and spec.origin:
            probe.module("sitecustomize", spec.origin, kind="chained")
        module = bootstrap.module_from_spec(spec)
    except Exception as exc:
        _report(exc)
        return
    sys.modules["_patchkit_shadowed_sitecustomize"] = module
    spec.loader.exec_module(module)  # the user's errors are the user's: site reports them as usual


try:
    _start()
except Exception as _exc:  # pragma: no cover - _start swallows its own
    _report(_exc)
_chain()
