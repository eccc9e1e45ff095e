"""How a launch runs: the executors (local, Slurm), the job, the session that prepares and stores.

``executor`` (the protocol and its local and Slurm implementations), ``cluster`` (Slurm's
scheduling and collection), ``job`` (one server launch and its proof), ``prepare`` (a
patched, guarded worktree per commit), ``session`` (prepare + job + store), ``launches``
(what the verbs share), ``bisecting`` (a search driven by launches), ``smi`` (nvidia-smi).
Why a package of its own: everything that starts a process lives here, on top of
``records`` and ``stats``.
"""
