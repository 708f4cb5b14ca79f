-- tools/Attributes.lua - instance attributes (Instance:GetAttribute/SetAttribute), values in the
-- tagged encoding. Setting an attribute that exists keeps its type unless the value is tagged.

local Paths = require(script.Parent.Parent.Paths)
local Values = require(script.Parent.Parent.Values)
local U = require(script.Parent.Util)

local function encodeOrNil(v)
	if v == nil then
		return { type = "nil" }
	end
	return Values.encode(v)
end

local T = {}

T.get_attribute = {
	readOnly = true,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local name = U.str(args, "name")
		local v = inst:GetAttribute(name)
		local out = { path = Paths.format(inst), name = name, exists = v ~= nil, value = encodeOrNil(v) }
		if v == nil then
			local names = {}
			for k in pairs(inst:GetAttributes()) do
				table.insert(names, k)
			end
			table.sort(names)
			out.note = "no attribute \"" .. name .. "\"; attributes here: "
				.. (#names > 0 and table.concat(names, ", ") or "(none)")
		end
		return out
	end,
}

T.set_attribute = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local name = U.str(args, "name")
		if args.value == nil then
			error("missing argument \"value\" (use delete_attribute to remove one)", 0)
		end
		local cur = inst:GetAttribute(name)
		local expected, enum = nil, nil
		if cur ~= nil and not (type(args.value) == "table" and args.value.type ~= nil) then
			expected = typeof(cur)
			if expected == "EnumItem" then
				enum = cur.EnumType
			end
		end
		local value = Values.decode(args.value, expected, ctx.game, enum)
		if typeof(value) == "Instance" then
			error("attributes cannot hold Instances; store a path string or use an ObjectValue", 0)
		end
		local ok, err = pcall(function()
			inst:SetAttribute(name, value)
		end)
		if not ok then
			error("cannot set attribute \"" .. name .. "\" on " .. Paths.format(inst) .. ": "
				.. tostring(err):gsub("^.-:%d+: ", ""), 0)
		end
		return { path = Paths.format(inst), name = name, value = encodeOrNil(inst:GetAttribute(name)) }
	end,
}

T.get_attributes = {
	readOnly = true,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local out = {}
		local n = 0
		for k, v in pairs(inst:GetAttributes()) do
			out[k] = Values.encode(v)
			n = n + 1
		end
		return { path = Paths.format(inst), attributes = out, count = n }
	end,
}

T.delete_attribute = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local name = U.str(args, "name")
		local existed = inst:GetAttribute(name) ~= nil
		inst:SetAttribute(name, nil)
		return { path = Paths.format(inst), name = name, deleted = existed }
	end,
}

return T
