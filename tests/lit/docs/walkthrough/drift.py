# The page check fails when either side drifts.
#
# 1. The page: one IR line edited (stg-shard's reshard now names %r instead of %y).
# RUN: sed 's/%14 = stg.reshard %y on/%14 = stg.reshard %r on/' %S/../../../../docs/walkthrough.md > %t.page.md
# RUN: not %python %S/Inputs/check_page.py %t.page.md --root %S/../../../.. | filecheck %s --check-prefix=PAGE
# PAGE: page.md:line {{[0-9]+}} (stg-shard: a layout for every value): the snippet differs from `stagec-opt tests/lit/docs/walkthrough/Inputs/mlp.mlir -p 'stg-autodiff{optimizer=sgd micro_batches=2},stg-shard{dp=2 tp=2}'`: `%14 = stg.reshard %r on @mesh : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>` is not in the output where it should be (after {{[0-9]+}} matching line(s)); the output has `%14 = stg.reshard %y on @mesh
# PAGE-NOT: agree
#
# 2. The page: a cut line (` ...`) whose visible part is edited.
# RUN: sed 's/%40 = stg.sgd %38, %39 lr 1.000000e-04/%40 = stg.sgd %38, %39 lr 1.000000e-03/' %S/../../../../docs/walkthrough.md > %t.cut.md
# RUN: not %python %S/Inputs/check_page.py %t.cut.md --root %S/../../../.. | filecheck %s --check-prefix=CUT
# CUT: cut.md:line {{[0-9]+}} (stg-autodiff: the training step): the snippet differs from
# CUT-SAME: `%40 = stg.sgd %38, %39 lr 1.000000e-03 weight_decay 0.000000e+00 : ...` is not in the output
#
# 3. The tools: the same page against a model whose up projection is named %upp, as if
#    a pass's output had changed. Every snippet that shows %up fails.
# RUN: rm -rf %t.root && mkdir -p %t.root/tests/lit/docs/walkthrough/Inputs %t.root/docs
# RUN: cp %S/Inputs/notation.mlir %S/Inputs/show_trace.py %t.root/tests/lit/docs/walkthrough/Inputs/
# RUN: sed 's/%up\b/%upp/g' %S/Inputs/mlp.mlir > %t.root/tests/lit/docs/walkthrough/Inputs/mlp.mlir
# RUN: cp %S/../../../../docs/walkthrough.md %t.root/docs/walkthrough.md
# RUN: not %python %S/Inputs/check_page.py %t.root/docs/walkthrough.md | filecheck %s --check-prefix=TOOL
# TOOL: walkthrough.md:line {{[0-9]+}} (The model): the snippet differs from `cat tests/lit/docs/walkthrough/Inputs/mlp.mlir`
# TOOL: walkthrough.md:line {{[0-9]+}} (stg-fuse-gemms: GEMMs the frameworks run as one kernel): the snippet differs from
# TOOL-NOT: agree
#
# 4. An IR block that no command produces is an error, not an unchecked block.
# RUN: cp %S/../../../../docs/walkthrough.md %t.bare.md
# RUN: echo '```mlir' >> %t.bare.md
# RUN: echo 'stg.mesh @m [dp]' >> %t.bare.md
# RUN: echo '```' >> %t.bare.md
# RUN: not %python %S/Inputs/check_page.py %t.bare.md --root %S/../../../.. | filecheck %s --check-prefix=BARE
# BARE: bare.md:line {{[0-9]+}}: an mlir block with no ```sh command right above it: every IR snippet of the page must be the output of a command
