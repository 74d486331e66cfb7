"""The backend layer: turns typed options into a TensorFlow ConfigProto, environment flags, graph
transforms and session hooks. Everything TensorFlow-specific about an option lives here (or in
`precision/` and `debug/`, which contribute to the same plan).

`plan` holds the plan's types; `contributors` lists the contributors and runs them (`build_plan`).
Imports: `config`, `debug`, `distribute`, `precision`; never `estimator` or above."""
