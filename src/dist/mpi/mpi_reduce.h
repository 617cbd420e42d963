// How MPI reduces rcuda's dtypes: the MPI datatype and op of each (dtype, ReduceOp), with
// user-defined ops for float16 and bfloat16, which MPI lacks.
#pragma once

#include <mpi.h>

#include "rcuda/dist/process_group.h"

namespace rcuda::dist::mpi {

// For a dtype and op that check_reducible accepted. Avg is reduced as Sum (divide_in_place
// finishes it); bool reduces as uint8 with Sum and Max as a logical or, Min as a logical and.
MPI_Datatype reduce_datatype(DType dtype);
MPI_Op reduce_mpi_op(DType dtype, ReduceOp op);
// t /= size, for Avg (floating dtypes only), on the host.
void divide_in_place(const Tensor& t, int size);

}  // namespace rcuda::dist::mpi
