// RUN: not stagec-opt %s -p 'stg-defer-gradient-waits{in-flight=0}' 2>&1 | filecheck %s

// CHECK: in-flight=0: at least 1 burst of reductions is in flight

stg.mesh @m [fsdp = 2]
