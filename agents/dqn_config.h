// agents/train_config.h under its earlier name, kept so that code including it compiles; DqnConfig
// is TrainConfig there.
#pragma once

#include "agents/train_config.h"
