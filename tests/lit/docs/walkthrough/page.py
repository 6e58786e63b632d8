# docs/walkthrough.md cannot drift: every IR and output snippet in it is compared with
# the real output of the command shown above it (Inputs/check_page.py says how).
# The count pins that no snippet silently stops being checked (a renamed fence, a
# command moved away from its block): add one to the page, raise it here.
# RUN: %python %S/Inputs/check_page.py %S/../../../../docs/walkthrough.md | filecheck %s
# CHECK: walkthrough.md: 18 snippets from 16 commands agree
