"""The engines that search a protocol: BMC, induction, inference, Houdini, complete, explore."""
