// MPI for the distributed commands: initialised on first use, finalised at exit, with
// errors returned (MPI_ERRORS_RETURN) so a failure becomes an orchid::Error on the rank
// that sees it. The header does not include mpi.h, so callers need no MPI flags.
#pragma once

namespace orchid::distributed {

struct WorldInfo {
  int rank = 0;
  int size = 1;
};

// Initialises MPI once (a singleton run without mpirun is a world of one).
WorldInfo mpi_world();

// Ends every rank's run with `message` (one "orchid: error:" line from the rank that
// failed, exit code 1 on all ranks): MPI_Abort, so no rank waits forever for it.
[[noreturn]] void abort_all_ranks(const char* message);

}  // namespace orchid::distributed
