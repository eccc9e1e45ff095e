from patchkit.cli import entry

entry()
