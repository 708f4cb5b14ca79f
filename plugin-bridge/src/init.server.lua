-- init.server.lua: the plugin's entry script (Rojo builds plugin-bridge/src into one Script named
-- RunboxBridge with the modules as its children; build.lua bundles the same tree into one file).
-- `plugin` is the global Studio gives plugin scripts; without it (a test loading the bundle) the
-- entry does nothing and the modules are only made available.
if plugin == nil then
	return
end
require(script.Main).start(plugin)
