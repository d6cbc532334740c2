// A fixture for the layering test, never compiled: stands for sim/server/ so that includes of it
// resolve; the server may use the link layer below it.
#pragma once
#include "sim/link/reaches_up.h"
