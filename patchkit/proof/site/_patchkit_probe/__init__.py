"""patchkit's probe, in parts: what ``sitecustomize`` (the entry point beside this package) starts.

The probe's directory is first on the server's ``PYTHONPATH``, so this package is importable in every Python
process of the server under a name no server module uses.  It is standard library only (the server's
interpreter may not have patchkit) and each part is imported when a process needs it, never before:

* ``probe``: the per-process recorder (``Probe``: state, identity, fork and exit) and ``start``;
* ``writer``: the probe's file (one ``os.write`` per record, the exec chain of names, a full disk), JSON
  without ``json``, and the process's identity (host, boot id, kernel start time);
* ``env``: the variable families recorded and the redaction of secret-looking values;
* ``finder``: import finding (the meta path finder, ``path_stats``, legacy finders, ``.pth`` import lines);
* ``cores``: the core that records what ran (module files; functions where the interpreter offers
  ``sys.monitoring``), chosen as coverage.py's collector chooses its tracer;
* ``reads``: files a process opens for reading (an audit hook), and the ``exec`` it makes;
* ``loaders`` (lazy: once a program imports ``importlib.util``, ``runpy`` or ``torch.distributed``): the loader
  wrapper that patches a module after it ran, and the wrappers of ``spec_from_file_location`` and ``run_path``;
* ``torchinit`` (lazy: once a program imports ``torch.distributed``): ``init_process_group``'s wrapper, the
  environment at the call and the in-process comparison of secret values.

The probe records its entry point (kind ``probe``), which stands for every file here: it never records its
own parts as modules that ran, and the accounting (``patchkit.proof.PROBE_FILES``) knows them all as the probe.
"""
