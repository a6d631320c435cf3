# The operation layer's sources (test/ops.h is its interface; test/ops_internal.h says which file
# holds what), shared by tl-tests (the random suite), tl-random and the fuzzer (test/fuzz).
set(TLO_SOURCES ops_model.c ops_exclude.c ops_locality.c ops_compare.c ops_calls.c ops_offer.c
    ops_apply.c ops_codec.c ops_gen.c ops_run.c ops_resource.c ops_policy.c
    ops_demand.c ops_placement.c ops_shuffle.c)
list(TRANSFORM TLO_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
