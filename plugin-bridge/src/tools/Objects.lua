-- tools/Objects.lua - creating, deleting and duplicating instances. Batch tools are
-- all-or-nothing: when one entry fails, what the call created so far is destroyed and the error
-- names the entry.

local Paths = require(script.Parent.Parent.Paths)
local Values = require(script.Parent.Parent.Values)
local U = require(script.Parent.Util)

local MAX_BATCH = 200
local MAX_COPIES = 100

-- base, or base2, base3, ... : the first name no child of parent has (so each copy gets its own
-- path; a path cannot tell same-named siblings apart).
local function freeName(parent, base)
	if parent:FindFirstChild(base) == nil then
		return base
	end
	local k = 2
	while parent:FindFirstChild(base .. k) ~= nil do
		k = k + 1
	end
	return base .. k
end

-- A note for an answer when inst shares its name with a sibling.
local function clashNote(inst)
	local n = 0
	for _, c in ipairs(inst.Parent:GetChildren()) do
		if c.Name == inst.Name then
			n = n + 1
		end
	end
	if n > 1 then
		return "another child of " .. Paths.format(inst.Parent) .. " is also named \"" .. inst.Name
			.. "\"; a path reaches the first one, so rename one of them"
	end
	return nil
end

-- Builds one instance from {class_name, parent, name?, properties?}; parents it last.
local function build(ctx, spec)
	local className = U.str(spec, "class_name")
	local parent = U.resolve(ctx, U.str(spec, "parent"))
	local ok, inst = pcall(function()
		return Instance.new(className)
	end)
	if not ok or inst == nil then
		error("cannot create a \"" .. className .. "\": not a creatable class (names are case-sensitive:"
			.. " Part, Model, Folder, Script, LocalScript, ModuleScript, ...)", 0)
	end
	local okAll, err = pcall(function()
		if spec.name ~= nil then
			inst.Name = U.str(spec, "name")
		end
		if spec.properties ~= nil then
			if type(spec.properties) ~= "table" then
				error("properties must be an object {PropertyName: value}", 0)
			end
			local names = {}
			for k in pairs(spec.properties) do
				table.insert(names, k)
			end
			table.sort(names)
			for _, prop in ipairs(names) do
				if prop == "Parent" or prop == "ClassName" then
					error("set the parent with \"parent\", not in properties", 0)
				end
				inst[prop] = Values.forProperty(inst, prop, spec.properties[prop], ctx.game)
			end
		end
		inst.Parent = parent
	end)
	if not okAll then
		inst:Destroy()
		error(tostring(err):gsub("^.-:%d+: ", ""), 0)
	end
	return inst
end

-- Undoes what a failed batch made: while the call is recorded, its Cancel reverts everything
-- (FinishRecording Cancel "reverts the changes it captured"), and a Destroy inside the recording
-- could keep undo from restoring an instance; unrecorded, the instances are destroyed.
local function rollback(ctx, made)
	if ctx.recording ~= nil then
		return
	end
	for _, m in ipairs(made) do
		pcall(function()
			m:Destroy()
		end)
	end
end

local function createMany(ctx, list)
	if #list == 0 then
		error("\"objects\" is empty", 0)
	end
	if #list > MAX_BATCH then
		error("too many objects (" .. #list .. "); at most " .. MAX_BATCH .. " per call", 0)
	end
	local made = {}
	for i, spec in ipairs(list) do
		local ok, inst = pcall(build, ctx, spec)
		if not ok then
			rollback(ctx, made)
			error("objects[" .. i .. "]: " .. tostring(inst) .. " (nothing was created)", 0)
		end
		table.insert(made, inst)
	end
	local paths = {}
	for i, m in ipairs(made) do
		paths[i] = Paths.format(m)
	end
	return { created = paths, count = #paths }
end

local function offsetOf(ctx, v)
	if v == nil then
		return nil
	end
	local off = Values.decode(v, "Vector3", ctx.game)
	if typeof(off) ~= "Vector3" then
		error("offset must be a Vector3: " .. Values.hint("Vector3"), 0)
	end
	return off
end

-- Clones spec.path count times; returns the new instances.
local function duplicate(ctx, spec)
	local src = U.resolve(ctx, U.str(spec, "path"))
	if src.Parent == nil or src == ctx.game or src.Parent == ctx.game then
		error("cannot duplicate " .. Paths.format(src) .. " (the game and its services cannot be copied)", 0)
	end
	local count = U.int(spec, "count", 1, 1, MAX_COPIES)
	local parent = src.Parent
	if spec.new_parent ~= nil then
		parent = U.resolve(ctx, U.str(spec, "new_parent"))
	end
	local offset = offsetOf(ctx, spec.offset)
	local newName = U.str(spec, "new_name", true)
	local made = {}
	for i = 1, count do
		local copy = src:Clone()
		if copy == nil then
			error(Paths.format(src) .. " has Archivable = false and cannot be cloned", 0)
		end
		if newName then
			if count == 1 then
				copy.Name = newName
			else
				copy.Name = newName .. i
			end
		else
			copy.Name = freeName(parent, src.Name)
		end
		if offset and copy:IsA("PVInstance") then
			copy:PivotTo(src:GetPivot() + offset * i)
		end
		if spec.properties ~= nil then
			for prop, j in pairs(spec.properties) do
				copy[prop] = Values.forProperty(copy, prop, j, ctx.game)
			end
		end
		copy.Parent = parent
		table.insert(made, copy)
	end
	return made
end

local T = {}

T.create_object = {
	readOnly = false,
	run = function(args, ctx)
		local inst = build(ctx, { class_name = args.class_name, parent = args.parent, name = args.name })
		return { path = Paths.format(inst), className = inst.ClassName, note = clashNote(inst) }
	end,
}

T.create_object_with_properties = {
	readOnly = false,
	run = function(args, ctx)
		local inst = build(ctx, args)
		local props = {}
		for prop in pairs(args.properties or {}) do
			local _, v = Values.read(inst, prop)
			props[prop] = v == nil and { type = "nil" } or Values.encode(v)
		end
		return { path = Paths.format(inst), className = inst.ClassName, properties = props, note = clashNote(inst) }
	end,
}

T.mass_create_objects = {
	readOnly = false,
	run = function(args, ctx)
		local list = U.list(args, "objects")
		for i, spec in ipairs(list) do
			if type(spec) == "table" and spec.properties ~= nil then
				error("objects[" .. i .. "] has properties: use mass_create_objects_with_properties", 0)
			end
		end
		return createMany(ctx, list)
	end,
}

T.mass_create_objects_with_properties = {
	readOnly = false,
	run = function(args, ctx)
		return createMany(ctx, U.list(args, "objects"))
	end,
}

T.delete_object = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		if inst == ctx.game or inst.Parent == ctx.game then
			error("cannot delete " .. Paths.format(inst) .. ": the game and its services cannot be deleted", 0)
		end
		local path = Paths.format(inst)
		local n = #inst:GetDescendants()
		-- Parent = nil, not Destroy: Destroy locks Parent, and undo must be able to put the
		-- instance back (Instance.yaml); unrecorded there is no undo, so Destroy frees it.
		if ctx.recording ~= nil then
			inst.Parent = nil
		else
			inst:Destroy()
		end
		return { deleted = path, descendants = n }
	end,
}

T.smart_duplicate = {
	readOnly = false,
	run = function(args, ctx)
		local made = duplicate(ctx, args)
		local paths = {}
		for i, m in ipairs(made) do
			paths[i] = Paths.format(m)
		end
		return { created = paths, count = #paths }
	end,
}

T.mass_duplicate = {
	readOnly = false,
	run = function(args, ctx)
		local list = U.list(args, "duplicates")
		if #list == 0 then
			error("\"duplicates\" is empty", 0)
		end
		if #list > MAX_BATCH then
			error("too many entries (" .. #list .. "); at most " .. MAX_BATCH .. " per call", 0)
		end
		local planned = 0
		for _, spec in ipairs(list) do
			local c = type(spec) == "table" and spec.count or 1
			planned = planned + (type(c) == "number" and c or 1)
		end
		if planned > MAX_BATCH * 5 then
			error("too many copies in one call (" .. planned .. "; at most " .. (MAX_BATCH * 5) .. ")", 0)
		end
		local all = {}
		for i, spec in ipairs(list) do
			local ok, made = pcall(duplicate, ctx, spec)
			if not ok then
				for _, group in ipairs(all) do
					rollback(ctx, group)
				end
				error("duplicates[" .. i .. "]: " .. tostring(made):gsub("^.-:%d+: ", "") .. " (nothing was created)", 0)
			end
			table.insert(all, made)
		end
		local paths = {}
		for _, group in ipairs(all) do
			for _, m in ipairs(group) do
				table.insert(paths, Paths.format(m))
			end
		end
		return { created = paths, count = #paths }
	end,
}

return T
