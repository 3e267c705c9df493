"""The control plane: the control store (flags, routes, runtime state, audit log), the plane a run
reads its effective flags through, and the healing actions run between a failure and its retry."""
