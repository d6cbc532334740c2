// A fixture for the layering test, never compiled: stands for sim/ so that includes of it resolve.
#pragma once
