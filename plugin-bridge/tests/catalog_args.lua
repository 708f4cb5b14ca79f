-- catalog_args.lua - the Studio tools of common/tools/studio-*.json, and arguments for each built
-- from its input schema with sample values that point at objects of the fixture place (shared by
-- test_catalog.lua and test_outputs.lua).
--
--   local C = require("catalog_args")
--   C.catalog[name], C.order (sorted names), C.root (the checkout), C.readJson(path)
--   C.buildArgs(name, all)   -- the required arguments (all = false) or every declared one
--   C.watched(args)          -- a proxy of args and the set of names a handler read

local cjson = require("cjson")
local Fake = require("fake")

local root = Fake.srcDir .. "/../.."

local function readJson(path)
	local f = assert(io.open(path, "r"))
	local text = f:read("*a")
	f:close()
	return cjson.decode(text)
end

local function catalogFiles()
	local out = {}
	local p = io.popen("ls " .. root .. "/common/tools/studio-*.json 2>/dev/null")
	for line in p:lines() do
		table.insert(out, line)
	end
	p:close()
	return out
end

local catalog = {} -- name -> tool
local order = {}
for _, file in ipairs(catalogFiles()) do
	for _, t in ipairs(readJson(file).tools) do
		catalog[t.name] = t
		table.insert(order, t.name)
	end
end
table.sort(order)

-- Sample values by argument name (pointing at objects of the fixture place).
local SAMPLES = {
	path = "Workspace.Model.Part",
	paths = { "Workspace.Model.Part", "Workspace.Model.Handle" },
	property = "Transparency",
	value = 0.5,
	class_name = "Part",
	parent = "Workspace",
	name = "Thing",
	new_name = "Copy",
	new_parent = "Workspace",
	offset = { type = "Vector3", value = { 4, 0, 0 } },
	position = { type = "Vector3", value = { 0, 10, 0 } },
	query = "Part",
	limit = 10,
	depth = 2,
	max_nodes = 50,
	max_scripts = 50,
	recursive = true,
	case_sensitive = false,
	expression = "value + index",
	operation = "add",
	tag = "Lava",
	code = "print('ran') return 1 + 1",
	timeout = 5,
	mode = "start_play",
	asset_id = 1001,
	start_line = 1,
	end_line = 2,
	after_line = 1,
	lines = "-- inserted",
	replacement = "local y = 2",
	source = "print('new')",
	expected = "print(\"hello\")\nlocal x = 1",
	count = 2,
	max_chars = 1000,
	restart = true,
	operation_id = "op-1",
	max_output = 5000,
	max_size = 64,
	before = "local setup = 1",
	objects = { { class_name = "Part", parent = "Workspace", name = "A" },
		{ class_name = "Folder", parent = "ReplicatedStorage" } },
	duplicates = { { path = "Workspace.Model.Part", count = 1 }, { path = "Workspace.Lava", count = 2 } },
}
local OBJECT_SAMPLES = { properties = { Transparency = 0.25, Anchored = true } }
local ARRAY_SAMPLES = { properties = { "Anchored", "Size" } }
local INTEGER_SAMPLES = { offset = 0 } -- a page offset (smart_duplicate's offset is a Vector3)

-- Per-tool overrides (a script for script tools, the tagged part for attributes and tags...).
local SCRIPT = "ServerScriptService.MainScript"
local OVERRIDES = {
	get_file_tree = { cursor = "2:1" }, -- depth's sample is 2
	get_script_source = { path = SCRIPT },
	set_script_source = { path = SCRIPT },
	edit_script_lines = { path = SCRIPT },
	insert_script_lines = { path = SCRIPT },
	delete_script_lines = { path = SCRIPT },
	get_attribute = { path = "Workspace.Lava", name = "Damage" },
	set_attribute = { path = "Workspace.Lava", name = "Damage" },
	get_attributes = { path = "Workspace.Lava" },
	delete_attribute = { path = "Workspace.Lava", name = "Damage" },
	search_by_property = { property = "Anchored", value = true },
	search_files = { query = "hello" },
	get_class_info = { class_name = "Part" },
	insert_model = { query = "Tree" },
}
-- Tools whose required arguments alone cannot succeed: extra ones for the first run.
local EXTRA = {
	search_objects = { query = "Part" },
	insert_model = { asset_id = 1001 },
}

local function sample(tool, name, schema)
	local o = OVERRIDES[tool]
	if o and o[name] ~= nil then
		return o[name]
	end
	if schema.type == "object" and OBJECT_SAMPLES[name] then
		return OBJECT_SAMPLES[name]
	end
	if schema.type == "array" and ARRAY_SAMPLES[name] then
		return ARRAY_SAMPLES[name]
	end
	if schema.type == "integer" and INTEGER_SAMPLES[name] then
		return INTEGER_SAMPLES[name]
	end
	if SAMPLES[name] ~= nil then
		return SAMPLES[name]
	end
	if schema.enum then
		return schema.enum[1]
	end
	error(tool .. ": no sample value for argument \"" .. name .. "\"; add one to SAMPLES")
end

local LUA_TYPES = { string = "string", integer = "number", number = "number", boolean = "boolean", array = "table",
	object = "table" }

local function checkType(tool, name, schema, v)
	local t = schema.type
	if t == nil then
		return
	end
	eq(type(v), LUA_TYPES[t], tool .. "." .. name .. " sample type")
	if t == "integer" then
		eq(v, math.floor(v), tool .. "." .. name .. " is whole")
	end
	if schema.enum then
		local found = false
		for _, e in ipairs(schema.enum) do
			found = found or e == v
		end
		truthy(found, tool .. "." .. name .. " sample in enum")
	end
end

local function buildArgs(tool, all)
	local schema = catalog[tool].inputSchema
	local args = {}
	local props = schema.properties or {}
	local names = {}
	if all then
		for name in pairs(props) do
			table.insert(names, name)
		end
	else
		for _, name in ipairs(schema.required or {}) do
			table.insert(names, name)
		end
		for name in pairs(EXTRA[tool] or {}) do
			table.insert(names, name)
		end
	end
	for _, name in ipairs(names) do
		truthy(props[name], tool .. ": \"" .. name .. "\" is declared in properties")
		local v = (not all and EXTRA[tool] and EXTRA[tool][name]) or sample(tool, name, props[name])
		checkType(tool, name, props[name], v)
		args[name] = v
	end
	return args
end

-- Wraps args so the test sees which names the handler reads.
local function watched(args)
	local seen = {}
	local proxy = setmetatable({}, {
		__index = function(_, k)
			seen[k] = true
			return args[k]
		end,
	})
	return proxy, seen
end

return {
	catalog = catalog,
	order = order,
	root = root,
	readJson = readJson,
	buildArgs = buildArgs,
	watched = watched,
}
