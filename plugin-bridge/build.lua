-- plugin-bridge/build.lua: bundles plugin-bridge/src into ONE plugin script,
-- plugin-bridge/dist/RunboxBridge.lua, that a user drops into Studio's Plugins folder.
--
--   lua5.1 plugin-bridge/build.lua [SRC_DIR [OUT_FILE]]
--
-- The modules keep Roblox's own way of finding each other, require(script.Parent.Name) (and
-- script.Parent.Parent, script.Main, folders such as tools/), so the same sources work three
-- ways: built by Rojo (default.project.json) into a Script with ModuleScript children; bundled
-- here, where each module becomes a function(script, require) and a small loader hands every
-- module a stand-in `script` object that answers .Parent, .<child>, :GetChildren(),
-- :FindFirstChild(), .Name and .ClassName like the Rojo tree would; and loaded straight from
-- src/ by the lua5.1 tests (build.load), through the same loader.
--
-- The tree: src/init.server.lua is the plugin Script itself; every other src/X.lua is a child
-- ModuleScript X; a directory D is a Folder D (or a ModuleScript when it has D/init.lua).
-- Output is deterministic: modules in sorted path order, no dates, no absolute paths.
--
-- Used as a library (tests): set RUNBOX_BUILD_LIBRARY = true, then dofile returns
-- {list, bundle, load, write}.

local M = {}

-- The loader, emitted verbatim into the bundle and also run by build.load. It is a chunk that
-- returns makeLoader(sources) -> requireFn, rootNode; sources maps a path ("Main",
-- "tools/Create", "init.server") to function(script, require) returning the module's value.
M.LOADER = [==[
local function makeLoader(sources)
	local isModule, isDir = {}, {}
	for path in pairs(sources) do
		if path ~= "init.server" then
			local p = string.gsub(path, "/init$", "")
			isModule[p] = path
			local dir = string.match(p, "^(.*)/[^/]+$")
			while dir ~= nil do
				isDir[dir] = true
				dir = string.match(dir, "^(.*)/[^/]+$")
			end
		end
	end
	local nodes, cache, loading = {}, {}, {}
	local requireModule
	local function parentOf(path)
		if path == "" then
			return nil
		end
		return string.match(path, "^(.*)/[^/]+$") or ""
	end
	local function join(path, name)
		if path == "" then
			return name
		end
		return path .. "/" .. name
	end
	local function node(path)
		if nodes[path] ~= nil then
			return nodes[path]
		end
		local n = {}
		local name = path == "" and "RunboxBridge" or string.match(path, "([^/]+)$")
		local className = "Folder"
		if path == "" then
			className = "Script"
		elseif isModule[path] ~= nil then
			className = "ModuleScript"
		end
		local methods = {}
		function methods.GetChildren()
			local out, names = {}, {}
			local prefix = path == "" and "" or path .. "/"
			local seen = {}
			local function add(p)
				local rest = string.sub(p, #prefix + 1)
				local first = string.match(rest, "^([^/]+)")
				if string.sub(p, 1, #prefix) == prefix and first ~= nil and not seen[first] then
					seen[first] = true
					table.insert(names, first)
				end
			end
			for p in pairs(isModule) do
				add(p)
			end
			for p in pairs(isDir) do
				add(p)
			end
			table.sort(names)
			for _, c in ipairs(names) do
				table.insert(out, node(join(path, c)))
			end
			return out
		end
		function methods.FindFirstChild(_, childName)
			local p = join(path, tostring(childName))
			if isModule[p] ~= nil or isDir[p] then
				return node(p)
			end
			return nil
		end
		function methods.IsA(_, c)
			return c == className or c == "Instance" or (c == "LuaSourceContainer" and className ~= "Folder")
		end
		function methods.GetFullName()
			return "RunboxBridge" .. (path == "" and "" or "." .. string.gsub(path, "/", "."))
		end
		setmetatable(n, {
			__index = function(_, key)
				if key == "Name" then
					return name
				elseif key == "ClassName" then
					return className
				elseif key == "Parent" then
					local pp = parentOf(path)
					return pp ~= nil and node(pp) or nil
				elseif methods[key] ~= nil then
					return methods[key]
				end
				local p = join(path, tostring(key))
				if isModule[p] ~= nil or isDir[p] then
					return node(p)
				end
				error(tostring(key) .. " is not a valid member of " .. methods.GetFullName(), 2)
			end,
			__tostring = function()
				return name
			end,
		})
		nodes[n] = path
		nodes[path] = n
		return n
	end
	requireModule = function(target)
		local path
		if type(target) == "string" then
			path = string.gsub(string.gsub(target, "^script%.", ""), "%.", "/")
		else
			path = nodes[target]
		end
		local key = path ~= nil and isModule[path] or nil
		if key == nil then
			error("require: no module " .. tostring(path or target) .. " in the Runbox bundle", 2)
		end
		if cache[key] ~= nil then
			return cache[key]
		end
		if loading[key] then
			error("require: " .. key .. " requires itself (a cycle)", 2)
		end
		loading[key] = true
		local value = sources[key](node(path), requireModule)
		loading[key] = nil
		if value == nil then
			error("require: module " .. key .. " returned nothing", 2)
		end
		cache[key] = value
		return value
	end
	return requireModule, node("")
end
return makeLoader
]==]

local function sh_quote(s)
	return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

-- Module paths under srcdir (without ".lua"), sorted.
function M.list(srcdir)
	local p = assert(io.popen("cd " .. sh_quote(srcdir) .. " && find . -name '*.lua' -type f | LC_ALL=C sort"))
	local out = {}
	for line in p:lines() do
		local path = string.gsub(string.gsub(line, "^%./", ""), "%.lua$", "")
		table.insert(out, path)
	end
	p:close()
	table.sort(out)
	return out
end

local function readFile(path)
	local f = assert(io.open(path, "rb"))
	local text = f:read("*a")
	f:close()
	return text
end

-- Returns the bundle's text.
function M.bundle(srcdir)
	local paths = M.list(srcdir)
	local parts = {
		"-- RunboxBridge.lua: the Runbox Studio plugin in one file. Put it in Studio's Plugins folder\n",
		"-- (see docs/plugin.md). Generated by plugin-bridge/build.lua from plugin-bridge/src: do not\n",
		"-- edit; change the sources and rebuild.\n",
		"local RUNBOX_SOURCES = {}\n",
	}
	local hasEntry = false
	for _, path in ipairs(paths) do
		local text = readFile(srcdir .. "/" .. path .. ".lua")
		if string.sub(text, -1) ~= "\n" then
			text = text .. "\n"
		end
		-- Each module keeps its own line numbers visible in errors through this header.
		table.insert(parts, string.format("RUNBOX_SOURCES[%q] = function(script, require)\n", path))
		table.insert(parts, text)
		table.insert(parts, "end\n")
		if path == "init.server" then
			hasEntry = true
		end
	end
	assert(hasEntry, "build: " .. srcdir .. "/init.server.lua (the entry script) is missing")
	table.insert(parts, "local RUNBOX_REQUIRE, RUNBOX_ROOT = (function()\n")
	table.insert(parts, M.LOADER)
	table.insert(parts, "end)()(RUNBOX_SOURCES)\n")
	table.insert(parts, "RUNBOX_SOURCES[\"init.server\"](RUNBOX_ROOT, RUNBOX_REQUIRE)\n")
	table.insert(parts, "return { require = RUNBOX_REQUIRE, root = RUNBOX_ROOT }\n")
	return table.concat(parts)
end

-- Loads the modules straight from srcdir (for tests). Each module sees `script` and `require`
-- as globals of its own environment, which falls back to _G (the Roblox globals or fakes).
-- Returns require, root.
function M.load(srcdir)
	local sources = {}
	for _, path in ipairs(M.list(srcdir)) do
		local file = srcdir .. "/" .. path .. ".lua"
		local chunk = assert(loadfile(file))
		sources[path] = function(script, require)
			local env = setmetatable({ script = script, require = require }, { __index = _G, __newindex = _G })
			setfenv(chunk, env)
			return chunk()
		end
	end
	local makeLoader = assert(loadstring(M.LOADER, "=loader"))()
	return makeLoader(sources)
end

-- Writes the bundle; returns its size.
function M.write(srcdir, outfile)
	local text = M.bundle(srcdir)
	assert(loadstring(text, "=" .. outfile)) -- refuse to write a bundle that does not parse
	local dir = string.match(outfile, "^(.*)/[^/]+$")
	if dir ~= nil then
		os.execute("mkdir -p " .. sh_quote(dir))
	end
	local f = assert(io.open(outfile, "wb"))
	f:write(text)
	f:close()
	return #text
end

if rawget(_G, "RUNBOX_BUILD_LIBRARY") then
	return M
end

local here = string.match(arg and arg[0] or "", "^(.*)/[^/]+$") or "."
local srcdir = arg[1] or (here .. "/src")
local outfile = arg[2] or (here .. "/dist/RunboxBridge.lua")
local size = M.write(srcdir, outfile)
io.stdout:write(string.format("build.lua: wrote %s (%d bytes, %d modules)\n", outfile, size, #M.list(srcdir)))
