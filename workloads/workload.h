// The workload library's front door, for the command line:
//
//   ModelSpec model = load_model("gpt3-175b");          // zoo name or YAML path
//   apply_overrides(model, overrides);                   // --layers, --hidden, ...
//   Strategy strategy = default_strategy(model);         // the model file's strategy section
//   set_strategy_option(strategy, "tp", "8");            // each strategy flag given
//   CompiledJob compiled = compile(model, strategy, gpus);
//   check_memory(compiled, hbm_bytes);                   // unless --allow-oom
//
// Errors: InputError (exit status 2), OutOfMemoryError (exit status 4).
#pragma once

#include "workloads/compiler.h"
#include "workloads/errors.h"
#include "workloads/framework.h"
#include "workloads/model.h"
#include "workloads/program.h"
#include "workloads/schedule.h"
#include "workloads/strategy.h"
#include "workloads/timeline.h"
