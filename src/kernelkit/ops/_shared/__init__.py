"""What every op module shares: argument checks, the custom-op helper, the plan cache, launch rules
and C++ type names. An op module imports from here and from ``kernelkit.runtime`` only."""
