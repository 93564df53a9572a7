// Compiled by the LayerOrder tests with one layer's include root: from eval's root this
// include must not be found (eval is below fission), from fission's root it must compile.
#include "fission/kernel_view.hpp"
