-- tools/Properties.lua - reading and writing properties, one instance or many. Values use the
-- tagged encoding of Values.lua; a value of the wrong type is refused with the expected type.
-- The mass tools resolve every path and decode every value before changing anything, so a bad
-- path or value changes nothing.

local Paths = require(script.Parent.Parent.Paths)
local Values = require(script.Parent.Parent.Values)
local Globals = require(script.Parent.Parent.Globals)
local U = require(script.Parent.Util)

local MAX_PATHS = 1000

local function resolveAll(ctx, paths)
	if #paths == 0 then
		error("\"paths\" is empty: give at least one instance path", 0)
	end
	if #paths > MAX_PATHS then
		error("too many paths (" .. #paths .. "); at most " .. MAX_PATHS .. " per call", 0)
	end
	local out = {}
	for i, p in ipairs(paths) do
		local ok, inst = pcall(U.resolve, ctx, p)
		if not ok then
			error("paths[" .. i .. "]: " .. tostring(inst), 0)
		end
		out[i] = inst
	end
	return out
end

local function assign(inst, prop, value)
	local ok, err = pcall(function()
		inst[prop] = value
	end)
	if not ok then
		error("cannot set " .. Paths.format(inst) .. "." .. prop .. ": " .. tostring(err):gsub("^.-:%d+: ", ""), 0)
	end
end

local function readBack(inst, prop)
	local _, v = Values.read(inst, prop)
	if v == nil then
		return { type = "nil" }
	end
	return Values.encode(v)
end

-- Sets news[i] on insts[i] (every value was computed first, so a bad one changes nothing), then
-- reports what the first REPORT_MAX instances read back.
local REPORT_MAX = 50
local function applyAll(insts, prop, news)
	for i, inst in ipairs(insts) do
		assign(inst, prop, news[i])
	end
	local out = {}
	for i, inst in ipairs(insts) do
		if i > REPORT_MAX then
			break
		end
		out[i] = { path = Paths.format(inst), value = readBack(inst, prop) }
	end
	return { property = prop, count = #insts, results = out, truncated = #insts > REPORT_MAX }
end

local OPS = {
	add = function(a, b) return a + b end,
	subtract = function(a, b) return a - b end,
	multiply = function(a, b) return a * b end,
	divide = function(a, b) return a / b end,
}

local T = {}

T.set_property = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local prop = U.str(args, "property")
		if args.value == nil then
			error("missing argument \"value\" (to clear a reference send {\"type\":\"nil\"})", 0)
		end
		local value = Values.forProperty(inst, prop, args.value, ctx.game)
		assign(inst, prop, value)
		return { path = Paths.format(inst), property = prop, value = readBack(inst, prop) }
	end,
}

T.mass_set_property = {
	readOnly = false,
	run = function(args, ctx)
		local insts = resolveAll(ctx, U.list(args, "paths"))
		local prop = U.str(args, "property")
		if args.value == nil then
			error("missing argument \"value\"", 0)
		end
		local values = {}
		for i, inst in ipairs(insts) do
			values[i] = Values.forProperty(inst, prop, args.value, ctx.game)
		end
		for i, inst in ipairs(insts) do
			assign(inst, prop, values[i])
		end
		return { property = prop, count = #insts, value = readBack(insts[1], prop) }
	end,
}

T.mass_get_property = {
	readOnly = true,
	run = function(args, ctx)
		local paths = U.list(args, "paths")
		local prop = U.str(args, "property")
		if #paths > MAX_PATHS then
			error("too many paths (" .. #paths .. "); at most " .. MAX_PATHS .. " per call", 0)
		end
		local results = {}
		for i, p in ipairs(paths) do
			local ok, inst = pcall(U.resolve, ctx, p)
			if not ok then
				results[i] = { path = p, error = tostring(inst) }
			else
				local okR, v = Values.read(inst, prop)
				if okR then
					results[i] = { path = p, value = v == nil and { type = "nil" } or Values.encode(v) }
				else
					results[i] = { path = p, error = v }
				end
			end
		end
		return { property = prop, results = results }
	end,
}

T.set_calculated_property = {
	readOnly = false,
	run = function(args, ctx)
		local insts = resolveAll(ctx, U.list(args, "paths"))
		local prop = U.str(args, "property")
		local expr = U.str(args, "expression")
		local fn, cerr = loadstring("return " .. expr, "=expression")
		if not fn then
			error("expression does not compile: " .. tostring(cerr), 0)
		end
		local base = ctx.env or Globals.env()
		local news = {}
		for i, inst in ipairs(insts) do
			local okR, cur = Values.read(inst, prop)
			if not okR then
				error(cur, 0)
			end
			local env = setmetatable({ value = cur, index = i, count = #insts, instance = inst, game = ctx.game },
				{ __index = base })
			setfenv(fn, env)
			local ok, v = pcall(fn)
			if not ok then
				error("expression failed for " .. Paths.format(inst) .. " (value = " .. tostring(cur) .. "): "
					.. tostring(v), 0)
			end
			if cur ~= nil and typeof(v) ~= typeof(cur) then
				error("expression gave a " .. typeof(v) .. " for " .. Paths.format(inst) .. "." .. prop .. ", which is a "
					.. typeof(cur), 0)
			end
			news[i] = v
		end
		return applyAll(insts, prop, news)
	end,
}

T.set_relative_property = {
	readOnly = false,
	run = function(args, ctx)
		local insts = resolveAll(ctx, U.list(args, "paths"))
		local prop = U.str(args, "property")
		local opName = U.str(args, "operation")
		local op = OPS[opName]
		if not op then
			error("operation must be add, subtract, multiply or divide; got \"" .. opName .. "\"", 0)
		end
		if args.value == nil then
			error("missing argument \"value\"", 0)
		end
		local news = {}
		for i, inst in ipairs(insts) do
			local okR, cur = Values.read(inst, prop)
			if not okR then
				error(cur, 0)
			end
			if cur == nil then
				error(Paths.format(inst) .. "." .. prop .. " is empty; nothing to change relatively", 0)
			end
			local expected = typeof(args.value) == "number" and "number" or typeof(cur)
			local delta = Values.decode(args.value, expected, ctx.game)
			local ok, v = pcall(op, cur, delta)
			if not ok or typeof(v) ~= typeof(cur) then
				error("cannot " .. opName .. " a " .. typeof(delta) .. " to/with " .. Paths.format(inst) .. "." .. prop
					.. " (a " .. typeof(cur) .. ")", 0)
			end
			news[i] = v
		end
		return applyAll(insts, prop, news)
	end,
}

return T
