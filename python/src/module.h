// The extension module cugym._cugym: one registry for the process (built-in envs, then plugins)
// and the binding functions of each part.
#pragma once

#include <nanobind/nanobind.h>

#include "core/registry.h"

namespace cugym::python {

// The built-in envs plus every plugin loaded so far.
Registry& GlobalRegistry();

void BindVectorEnv(nanobind::module_& m);
void BindTraining(nanobind::module_& m);
void BindStats(nanobind::module_& m);

}  // namespace cugym::python
