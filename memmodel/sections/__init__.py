"""The memory side's Python-only set-up: each section declared on the layout with its roles
(memmodel.layout) and set from the profile, and the Python views and growth of what the core
keeps. Kept out of the compiled modules, whose fields they read, so that editing them does not
recompile the core (memmodel.jit.frozen_sources lists none of them). memmodel.build calls
them in order."""
