//! Generating the code: only `::status_core` paths.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::parse::{DependencyDef, FeatureDef, GroupDef, Kind};

pub(crate) fn dependency(def: &DependencyDef) -> TokenStream {
    let function = &def.function;
    let vis = &function.vis;
    let name = &function.sig.ident;
    let attrs = &function.attrs;
    let output = &function.sig.output;
    let body = &function.block;
    let inner = format_ident!("__status_check_{}", name);
    let id = &def.id;
    let urgency = Ident::new(def.urgency, Span::call_site());
    let constructor = match def.kind {
        Kind::Ping => quote!(ping),
        Kind::Tiered => quote!(tiered),
    };
    let texts = def.texts.iter().map(|(method, value)| {
        let method = Ident::new(method, Span::call_site());
        quote!(.#method(#value))
    });
    let counts = def.counts.iter().map(|(method, value)| {
        let method = Ident::new(method, Span::call_site());
        quote!(.#method(#value))
    });
    let timeout = def
        .timeout_ms
        .map(|ms| quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    let period = def
        .period_ms
        .map(|ms| quote!(.period(::core::time::Duration::from_millis(#ms))));
    let tags = &def.tags;
    let parents = &def.parents;
    let params = &function.sig.inputs;
    let args: Vec<_> = params
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(arg) => match &*arg.pat {
                syn::Pat::Ident(i) => Some(i.ident.clone()),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    quote! {
        #(#attrs)*
        #vis fn #name(#params) -> ::status_core::Dependency {
            async fn #inner(#params) #output #body
            // Each run gets its own clones of the arguments (clients, pools, handles).
            let check = move || {
                #(let #args = ::core::clone::Clone::clone(&#args);)*
                #inner(#(#args),*)
            };
            ::status_core::Dependency::builder(#id, ::status_core::check::#constructor(check))
                .urgency(::status_core::Urgency::#urgency)
                #(#texts)*
                #timeout
                #period
                #(.tag(#tags))*
                #(.depends_on(#parents))*
                #(#counts)*
                .build()
                .expect("validated at compile time by #[status_core::dependency]")
        }
    }
}

pub(crate) fn feature(def: &FeatureDef) -> TokenStream {
    let name = &def.name;
    let description = def.description.as_ref().map(|d| quote!(.description(#d)));
    let requires = def.requires.iter().map(|(id, status)| {
        let status = Ident::new(status, Span::call_site());
        quote!(.requires(#id, ::status_core::CheckStatus::#status))
    });
    let system = def.requires_system.map(|status| {
        let status = Ident::new(status, Span::call_site());
        quote!(.requires_system(::status_core::CheckStatus::#status))
    });
    quote! {
        ::status_core::Feature::builder(#name)
            #description
            #(#requires)*
            #system
            .build()
            .expect("validated at compile time by status_core::feature!")
    }
}

pub(crate) fn group(def: &GroupDef) -> TokenStream {
    let name = &def.name;
    let dependencies = def.dependencies.iter().map(|id| quote!(.dependency(#id)));
    let tags = def.tags.iter().map(|tag| quote!(.tag(#tag)));
    let fails_on = def.fails_on.map(|status| {
        let status = Ident::new(status, Span::call_site());
        quote!(.fails_on(::status_core::CheckStatus::#status))
    });
    let rotation = def.rotation.map(|r| quote!(.rotation(#r)));
    let startup = def.startup.map(|s| quote!(.startup(#s)));
    quote! {
        ::status_core::Group::builder(#name)
            #(#dependencies)*
            #(#tags)*
            #fails_on
            #rotation
            #startup
            .build()
            .expect("validated at compile time by status_core::group!")
    }
}
