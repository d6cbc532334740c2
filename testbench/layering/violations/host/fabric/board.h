// A fixture for the layering test, never compiled: stands for host/ so that includes of it resolve.
#pragma once
