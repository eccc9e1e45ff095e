"""How a launch runs: the executors (local, Slurm), the job, the session that prepares and stores.

``executor`` (the protocol and the values it takes and gives), one module per executor:
``local`` (in this process) and ``slurm`` (Slurm jobs via submitit, Slurm's options and
states), ``ledger`` (a verb's batch of launches in the store, begun, resumed or set aside,
whichever executor runs it), ``scheduled`` (bench launches shipped as Slurm jobs and read
back), ``job`` (one server launch and its proof), ``prepare`` (a patched, guarded worktree
per commit), ``session`` (prepare + job + store), ``launches`` (what the verbs share: their
options, the executor they ask for, the launch loop), ``bisecting`` (a search driven by
launches), ``smi`` (nvidia-smi).
Why a package of its own: everything that starts a process lives here, on top of
``records`` and ``stats``.
"""
