-- tools/Instances.lua - reading the place: tree, searches, properties, classes, summaries.
-- Every tool here is read-only. Large answers come in pages (tools/Paging.lua): a cut answer
-- says truncated = true, the total, and the offset or cursor of the next page.

local Paths = require(script.Parent.Parent.Paths)
local Values = require(script.Parent.Parent.Values)
local U = require(script.Parent.Util)
local Paging = require(script.Parent.Paging)

-- Properties tried by get_instance_properties / get_class_info when the engine has no
-- reflection API available; members a class lacks are skipped.
local CANDIDATES = {
	"Name", "ClassName", "Archivable",
	-- parts / models
	"Anchored", "CanCollide", "CanTouch", "CanQuery", "CastShadow", "Locked", "Massless", "Size", "Position",
	"Orientation", "CFrame", "Color", "BrickColor", "Material", "MaterialVariant", "Transparency", "Reflectance",
	"Shape", "MeshId", "TextureID", "PrimaryPart", "WorldPivot",
	-- scripts
	"Enabled", "Disabled", "RunContext",
	-- GUI
	"AnchorPoint", "BackgroundColor3", "BackgroundTransparency", "BorderSizePixel", "Visible", "ZIndex", "LayoutOrder",
	"Text", "TextColor3", "TextSize", "TextScaled", "Font", "Image", "ImageColor3", "SliceCenter", "ResetOnSpawn",
	"DisplayOrder", "PaddingLeft", "PaddingRight", "PaddingTop", "PaddingBottom", "SortOrder", "Padding",
	-- values, lights, sound, particles, constraints
	"Value", "Brightness", "Range", "SoundId", "Volume", "Looped", "Playing", "Rate", "Lifetime", "Texture",
	"Part0", "Part1",
	-- humanoid, camera, lighting, workspace, players
	"Health", "MaxHealth", "WalkSpeed", "FieldOfView", "CameraSubject", "CurrentCamera", "Gravity", "ClockTime",
	"Ambient", "OutdoorAmbient", "FogEnd", "MaxPlayers", "TeamColor", "HttpEnabled",
}

local BASES = { "BasePart", "PVInstance", "Model", "GuiObject", "GuiBase2d", "LayerCollector", "LuaSourceContainer",
	"BaseScript", "ValueBase", "Constraint", "Light", "Instance" }

-- Services worth showing under game (others are listed only when they have children).
local MAIN_SERVICES = {
	Workspace = true, Players = true, Lighting = true, ReplicatedFirst = true, ReplicatedStorage = true,
	ServerScriptService = true, ServerStorage = true, StarterGui = true, StarterPack = true, StarterPlayer = true,
	Teams = true, SoundService = true, Chat = true, TextChatService = true,
}

local function children(inst)
	local ok, list = pcall(function()
		return inst:GetChildren()
	end)
	if ok then
		return list
	end
	return {}
end

local function shownChildren(inst)
	local list = children(inst)
	if inst.ClassName ~= "DataModel" then
		return list
	end
	local out = {}
	for _, c in ipairs(list) do
		local ok, show = pcall(function()
			return not U.isInternal(c) and (MAIN_SERVICES[c.ClassName] or #children(c) > 0)
		end)
		if ok and show then
			table.insert(out, c)
		end
	end
	return out
end

local function propertyNames(className, ctx)
	local ok, list = pcall(function()
		return ctx.game:GetService("ReflectionService"):GetPropertiesOfClass(className)
	end)
	if ok and type(list) == "table" and #list > 0 then
		local names = {}
		for _, p in ipairs(list) do
			local n = type(p) == "table" and p.Name or p
			-- deprecated properties (they carry a deprecation message) only make answers longer
			local deprecated = type(p) == "table" and type(p.Display) == "table" and p.Display.DeprecationMessage ~= nil
			if type(n) == "string" and not deprecated then
				table.insert(names, n)
			end
		end
		if #names > 0 then
			return names
		end
	end
	return CANDIDATES
end

local function readProperties(inst, names)
	local props, missing = {}, {}
	for _, name in ipairs(names) do
		if name ~= "Source" and name ~= "Parent" then
			local ok, v = Values.read(inst, name)
			if ok then
				if v == nil then
					props[name] = { type = "nil" }
				else
					props[name] = Values.encode(v)
				end
			else
				table.insert(missing, name)
			end
		end
	end
	return props, missing
end

local function matches(text, query, caseSensitive)
	if caseSensitive then
		return text:find(query, 1, true) ~= nil
	end
	return text:lower():find(query:lower(), 1, true) ~= nil
end

local SUMMARY_MAX = 500000 -- instances summarize_game counts at most
local CONTAINERS_MAX = 1000 -- containers get_project_structure lists at most

local T = {}

T.get_file_tree = {
	readOnly = true,
	run = function(args, ctx)
		local root = U.root(ctx, args)
		local out = Paging.tree({
			root = root,
			depth = U.int(args, "depth", 3, 1, 10),
			maxNodes = U.int(args, "max_nodes", 300, 1, 2000),
			cursor = U.str(args, "cursor", true),
			children = shownChildren,
			label = function(inst)
				return { name = inst.Name, className = inst.ClassName }
			end,
			yield = function()
				task.wait()
			end,
		})
		out.root = Paths.format(root)
		return out
	end,
}

T.search_files = {
	readOnly = true,
	run = function(args, ctx)
		local query = U.str(args, "query")
		local root = U.root(ctx, args)
		local pager = Paging.new(U, args, 50, 500)
		local cs = args.case_sensitive == true
		U.walk(root, function(inst)
			if not U.isScript(inst) then
				return false
			end
			local hit = { path = Paths.format(inst), className = inst.ClassName, nameMatch = matches(inst.Name, query, cs) }
			local lines = {}
			local ok, src = pcall(U.getSource, ctx, inst)
			if ok and type(src) == "string" then
				for i, line in ipairs(U.splitLines(src)) do
					if matches(line, query, cs) then
						if #lines >= 5 then
							hit.moreLines = true
							break
						end
						table.insert(lines, { line = i, text = line:sub(1, 200) })
					end
				end
			end
			if hit.nameMatch or #lines > 0 then
				hit.lines = lines
				return pager:add(hit)
			end
			return false
		end)
		return pager:finish({ query = query }, "results", "matching scripts")
	end,
}

T.get_place_info = {
	readOnly = true,
	run = function(args, ctx)
		local g = ctx.game
		local run = U.svc(ctx, "RunService")
		local scripts = 0
		U.walk(g, function(inst)
			if U.isScript(inst) then
				scripts = scripts + 1
			end
			return false
		end)
		return {
			name = g.Name,
			placeId = g.PlaceId,
			gameId = g.GameId,
			creatorId = g.CreatorId,
			placeVersion = g.PlaceVersion,
			mode = run:IsEdit() and "edit" or "running",
			workspaceChildren = #children(g:GetService("Workspace")),
			scripts = scripts,
		}
	end,
}

T.get_services = {
	readOnly = true,
	run = function(args, ctx)
		local out = {}
		for _, c in ipairs(children(ctx.game)) do
			table.insert(out, { name = c.Name, className = c.ClassName, children = #children(c) })
		end
		table.sort(out, function(a, b) return a.name < b.name end)
		return { services = out }
	end,
}

T.search_objects = {
	readOnly = true,
	run = function(args, ctx)
		local query = U.str(args, "query", true)
		local className = U.str(args, "class_name", true)
		if (query == nil or query == "") and className == nil then
			error("give a query (part of a name), a class_name, or both", 0)
		end
		local root = U.root(ctx, args)
		local pager = Paging.new(U, args, 50, 1000)
		U.walk(root, function(inst)
			if (query == nil or matches(inst.Name, query, false)) and (className == nil or inst:IsA(className)) then
				return pager:add(function()
					return U.describe(inst)
				end)
			end
			return false
		end)
		return pager:finish({}, "results", "matching instances")
	end,
}

T.get_instance_properties = {
	readOnly = true,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local names = U.list(args, "properties", true)
		local props, missing = readProperties(inst, names or propertyNames(inst.ClassName, ctx))
		local out = {
			path = Paths.format(inst),
			className = inst.ClassName,
			parent = inst.Parent and Paths.format(inst.Parent) or nil,
			properties = props,
			attributes = Values.encode(inst:GetAttributes()),
			tags = inst:GetTags(),
			children = #children(inst),
		}
		if names and #missing > 0 then
			out.missing = missing
			out.note = inst.ClassName .. " has no property named " .. table.concat(missing, ", ")
		end
		if U.isScript(inst) then
			out.note = (out.note and (out.note .. "; ") or "") .. "read the code with get_script_source"
		end
		return out
	end,
}

T.get_instance_children = {
	readOnly = true,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local pager = Paging.new(U, args, 200, 2000)
		local className = U.str(args, "class_name", true)
		local function visit(c)
			if className == nil or c:IsA(className) then
				return pager:add(function()
					return U.describe(c)
				end)
			end
			return false
		end
		if args.recursive then
			U.walk(inst, visit)
		else
			for _, c in ipairs(children(inst)) do
				local ok, stop = pcall(visit, c)
				if ok and stop then
					break
				end
			end
		end
		return pager:finish({ path = Paths.format(inst) }, "children", "children")
	end,
}

T.search_by_property = {
	readOnly = true,
	run = function(args, ctx)
		local prop = U.str(args, "property")
		if args.value == nil then
			error("missing argument \"value\"", 0)
		end
		local root = U.root(ctx, args)
		local className = U.str(args, "class_name", true)
		local pager = Paging.new(U, args, 50, 1000)
		local cache = {}
		U.walk(root, function(inst)
			if className and not inst:IsA(className) then
				return false
			end
			local ok, cur = Values.read(inst, prop)
			if not ok or cur == nil then
				return false
			end
			local t = typeof(cur)
			local key = t == "EnumItem" and tostring(cur.EnumType) or t
			if cache[key] == nil then
				local okd, want = pcall(Values.decode, args.value, t, ctx.game, t == "EnumItem" and cur.EnumType or nil)
				cache[key] = { ok = okd, value = want }
			end
			local want = cache[key]
			if want.ok and Values.near(want.value, cur) then
				return pager:add(function()
					local d = U.describe(inst)
					d.value = Values.encode(cur)
					return d
				end)
			end
			return false
		end)
		return pager:finish({ property = prop }, "results", "matching instances")
	end,
}

T.get_class_info = {
	readOnly = true,
	run = function(args, ctx)
		local className = U.str(args, "class_name")
		local sample
		local creatable = false
		local ok, inst = pcall(function()
			return Instance.new(className)
		end)
		if ok and inst then
			sample, creatable = inst, true
		else
			U.walk(ctx.game, function(d)
				if d.ClassName == className then
					sample = d
					return true
				end
				return false
			end)
			if not sample then
				local okS, svc = pcall(function() return ctx.game:GetService(className) end)
				if okS and svc then
					sample = svc
				end
			end
		end
		if not sample then
			error("unknown class \"" .. className .. "\" (not creatable and no instance of it in the place);"
				.. " class names are case-sensitive, e.g. Part, Model, Script", 0)
		end
		local props = {}
		local names = propertyNames(className, ctx)
		for _, name in ipairs(names) do
			if name ~= "Parent" and name ~= "Source" then
				local okR, v = Values.read(sample, name)
				if okR then
					local t = typeof(v)
					if t == "EnumItem" then
						t = "Enum." .. tostring(v.EnumType)
					elseif v == nil then
						t = "Instance"
					end
					table.insert(props, { name = name, type = t, default = creatable and Values.encode(v) or nil })
				end
			end
		end
		local bases = {}
		for _, b in ipairs(BASES) do
			if b ~= className and sample:IsA(b) then
				table.insert(bases, b)
			end
		end
		if creatable then
			sample:Destroy()
		end
		return { className = className, creatable = creatable, inherits = bases, properties = props }
	end,
}

T.get_project_structure = {
	readOnly = true,
	run = function(args, ctx)
		local depth = U.int(args, "depth", 3, 1, 10)
		local pager = Paging.new(U, args, 300, 2000, "max_scripts")
		local containers, containerCount = {}, 0
		for _, svc in ipairs(shownChildren(ctx.game)) do
			U.walk(svc, function(inst)
				if U.isScript(inst) then
					return pager:add(function()
						local okS, src = pcall(U.getSource, ctx, inst)
						local lines = 0
						if okS and type(src) == "string" then
							lines = #U.splitLines(src)
						end
						return { path = Paths.format(inst), className = inst.ClassName, lines = lines }
					end)
				elseif inst:IsA("Folder") or inst:IsA("Model") or inst:IsA("ScreenGui") then
					local d, p = 0, inst
					while p and p ~= svc do
						d = d + 1
						p = p.Parent
					end
					if d <= depth then
						containerCount = containerCount + 1
						if #containers < CONTAINERS_MAX then
							table.insert(containers, { path = Paths.format(inst), className = inst.ClassName,
								children = #children(inst) })
						end
					end
				end
				return false
			end)
		end
		local out = pager:finish({ containers = containers, containerCount = containerCount }, "scripts", "scripts")
		if containerCount > #containers then
			out.truncated = true
			out.note = (out.note and (out.note .. "; ") or "") .. "containers cut at " .. CONTAINERS_MAX .. " of "
				.. containerCount .. " (ask for less depth)"
		end
		return out
	end,
}

T.summarize_game = {
	readOnly = true,
	run = function(args, ctx)
		local g = ctx.game
		local counts, total, scripts, lines = {}, 0, 0, 0
		local services = {}
		local cut = false
		for _, svc in ipairs(shownChildren(g)) do
			local n = 0
			cut = cut or U.walk(svc, function(inst)
				if total + n >= SUMMARY_MAX then
					return true
				end
				n = n + 1
				counts[inst.ClassName] = (counts[inst.ClassName] or 0) + 1
				if U.isScript(inst) then
					scripts = scripts + 1
					local okS, src = pcall(U.getSource, ctx, inst)
					if okS and type(src) == "string" then
						lines = lines + #U.splitLines(src)
					end
				end
				return false
			end)
			total = total + n
			table.insert(services, { name = svc.Name, descendants = n })
		end
		local classes = {}
		for name, n in pairs(counts) do
			table.insert(classes, { className = name, count = n })
		end
		table.sort(classes, function(a, b)
			if a.count ~= b.count then
				return a.count > b.count
			end
			return a.className < b.className
		end)
		local pager = Paging.new(U, args, 25, 1000)
		for _, c in ipairs(classes) do
			pager:add(c)
		end
		local okT, tags = pcall(function() return U.svc(ctx, "CollectionService"):GetAllTags() end)
		local out = pager:finish({
			name = g.Name,
			placeId = g.PlaceId,
			instances = total,
			scripts = scripts,
			scriptLines = lines,
			services = services,
			tags = okT and tags or {},
		}, "topClasses", "classes")
		if cut then
			out.truncated = true
			out.note = (out.note and (out.note .. "; ") or "") .. "stopped counting at " .. SUMMARY_MAX
				.. " instances: the counts cover only those"
		end
		return out
	end,
}

return T
